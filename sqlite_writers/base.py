"""Django's SQLite backend, with its transactions queued (sqlite_writers.queue).

Each transaction (atomic() begins one with BEGIN IMMEDIATE, see settings)
takes its place in the file's writer queue before it begins and leaves it
when it commits or rolls back, so writers of every thread and process take
turns in the kernel instead of sleeping in SQLite's busy handler.
"""

from django.db.backends.sqlite3 import base

from sqlite_writers.queue import queue_for


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        self._close_queue()
        self.writer_queue = queue_for(self.settings_dict["NAME"])
        return connection

    def _start_transaction_under_autocommit(self):
        queue = getattr(self, "writer_queue", None)
        if queue is not None:
            queue.join()
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            if queue is not None:
                queue.leave()
            raise

    def _commit(self):
        try:
            super()._commit()
        finally:
            self._leave_queue()

    def _rollback(self):
        try:
            super()._rollback()
        finally:
            self._leave_queue()

    def _close(self):
        try:
            super()._close()
        finally:
            self._close_queue()

    def _leave_queue(self):
        queue = getattr(self, "writer_queue", None)
        if queue is not None:
            queue.leave()

    def _close_queue(self):
        queue = getattr(self, "writer_queue", None)
        if queue is not None:
            queue.close()
