"""A multipart upload's temporary file, handed to the disk as it arrives.

The stored file is synced before its row commits (sharing.storage); left to
that moment, the sync writes the whole upload while the client waits. Asking
the kernel to start writing every WRITEBACK_STEP bytes (sharing.writeback)
overlaps the disk with the network, as a tus chunk does.
"""

from django.core.files.uploadhandler import TemporaryFileUploadHandler

from sharing.writeback import start_writeback

WRITEBACK_STEP = 2 * 1024 * 1024


class WritebackTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.written = 0
        self.queued = 0  # written from here on and not yet handed to the disk

    def receive_data_chunk(self, raw_data, start):
        super().receive_data_chunk(raw_data, start)
        self.written += len(raw_data)
        if self.written - self.queued >= WRITEBACK_STEP:
            self.file.flush()  # out of Python's buffer, into the page cache
            start_writeback(self.file.fileno(), self.queued, self.written - self.queued)
            self.queued = self.written
