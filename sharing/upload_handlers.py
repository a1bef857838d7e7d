"""A multipart upload's temporary file, handed to the disk as it arrives.

The stored file is synced before its row commits (sharing.storage); left to
that moment, the sync writes the whole upload while the client waits.
Handing the bytes over as they come (sharing.writeback) overlaps the disk
with the network, as a tus chunk does.
"""

from django.core.files.uploadhandler import TemporaryFileUploadHandler

from sharing.writeback import Writeback


class WritebackTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.writeback = Writeback(self.file.fileno())

    def receive_data_chunk(self, raw_data, start):
        super().receive_data_chunk(raw_data, start)
        written = start + len(raw_data)  # `start`: the chunk's offset in the file
        if self.writeback.due(written):
            self.file.flush()  # out of Python's buffer, into the page cache
            self.writeback.hand_over(written)
