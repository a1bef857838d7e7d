"""Where a multipart upload's bytes go as they arrive.

To a storage that takes a file in parts (a bucket: part_writer), straight
into it, with the digests computed on the way: nothing on the local disk,
at most one part in memory. Otherwise to a temporary file handed to the disk
as it arrives: the stored file is synced before its row commits
(storage.disk); left to that moment, the sync writes the whole upload
while the client waits. Handing the bytes over as they come
(storage.writeback) overlaps the disk with the network, as a tus chunk does.
"""

import logging

from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopFutureHandlers, TemporaryFileUploadHandler

from storage import store
from storage.stored import Digests, new_name
from storage.writeback import Writeback

logger = logging.getLogger(__name__)


class StoredUpload(UploadedFile):
    """An uploaded file whose bytes the storage already holds under
    `stored_name`, with their digests. StoredFile.create_from_upload adopts
    it; one it never adopted (the request refused it: too large, over quota,
    invalid) is deleted when the request closes its files."""

    def __init__(self, *, name, stored_name, size, content_type, charset, digests: Digests):
        super().__init__(None, name, content_type, size, charset)
        self.stored_name = stored_name
        self.digests = digests
        self.adopted = False

    def chunks(self, chunk_size=None):
        with store.files().open(self.stored_name, "rb") as handle:
            yield from handle.chunks(chunk_size)

    def close(self):
        if not self.adopted:
            self.adopted = True  # once
            try:
                store.files().delete(self.stored_name)
            except Exception:
                logger.warning("Could not delete the refused upload %s", self.stored_name, exc_info=True)


class StreamingStorageUploadHandler(FileUploadHandler):
    """Each chunk into the storage as it arrives, when the storage can take
    a file in parts; otherwise the chunks go on to the next handler."""

    writer = None

    def new_file(self, field_name, file_name, content_type, content_length, charset=None, content_type_extra=None):
        super().new_file(field_name, file_name, content_type, content_length, charset, content_type_extra)
        self.stored_name = new_name()
        self.writer = store.part_writer(self.stored_name, content_type)
        if self.writer is not None:
            self.digests = Digests()
            raise StopFutureHandlers  # no temporary file for the handler after this one

    def receive_data_chunk(self, raw_data, start):
        if self.writer is None:
            return raw_data
        self.writer.write(raw_data)
        self.digests.update(raw_data)
        return None

    def file_complete(self, file_size):
        if self.writer is None:
            return None
        self.writer.complete()
        self.writer = None
        return StoredUpload(
            name=self.file_name,
            stored_name=self.stored_name,
            size=file_size,
            content_type=self.content_type,
            charset=self.charset,
            digests=self.digests,
        )

    def upload_interrupted(self):
        if self.writer is not None:
            self.writer.abort()
            self.writer = None


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
