"""Files, shares and the sharing policy: the rules of the product.

Everything is importable from sharing.models. The modules form layers; a
module imports only from the layers above it in this list, never below
(tests/test_layers.py checks it):

1. state      a share's statuses, the one servable rule (as Q, SQL and a
              check), what has happened to a share (fate_of), the time that
              decides (locked_now)
   scans      a file's scan states, and the rule that a share holding a
              file not cleared by its scan is not served
   budget     a limited link's byte budget (what "N downloads" means in bytes)
   events     a share's history (ShareEvent)
   policy     the admin-edited sharing policy
2. quotas     how many bytes each user's files may take (StorageAccount)
3. files      stored files and the upload rules
   items      which files a share holds (ShareItem)
   leftovers  a deleted file's bytes, recorded until the storage has
              deleted them (BytesToDelete)
   quick_downloads
              downloads of links without a limit, decided and recorded in
              batches (Download, the pending rows)
4. receipts   how much of a download its client received (the delivered
              event), written in the quick downloads' batches when it can
5. downloads  what a response may send (reserving and settling bytes),
              counting copies, folding pending counts
   querysets  queries over shares (holding a file, servable, by status)
6. shares     the Share model: create, change, unshare
7. lookup     a share by its link's token (the public link's first query)
   sealed     an end-to-end encrypted share's sealed metadata (and its
              password-wrapped secret), made with it
   expiring   the one path that ends shares by time
8. reactivation, removal
              bringing an ended share back; deleting a file with its shares,
              ending a disabled owner's shares, reaping ephemeral files,
              purging ended shares past retention
"""

from sharing.models.budget import byte_budget, copy_bytes, resend_allowance
from sharing.models.downloads import Download, Reservation
from sharing.models.events import ShareEvent, Visitor, stored_address
from sharing.models.expiring import expire_overdue, expire_shares
from sharing.models.files import (
    StoredFile,
    UploadTooLarge,
    check_upload,
    clean_content_type,
    clean_file_name,
    refund_deleted_file,
    stored_file_path,
)
from sharing.models.folding import fold_pending
from sharing.models.items import MAX_FILES_PER_SHARE, ShareItem
from sharing.models.leftovers import BytesToDelete, delete_stored_bytes, retry_deletions
from sharing.models.policy import SharingPolicy, format_duration
from sharing.models.querysets import ShareQuerySet
from sharing.models.quotas import QuotaExceeded, StorageAccount
from sharing.models.reactivation import ReactivationRefused, reactivate
from sharing.models.removal import delete_file, end_owner_shares
from sharing.models.scans import ScanState
from sharing.models.sealed import (
    MAX_SEALED_METADATA_BYTES,
    SealedMetadata,
    check_sealed_metadata,
    check_wrapped_secret,
    create_sealed_share,
    refuse_sealed_changes,
    sealed_metadata_of,
    sealed_share_ids,
    wrapped_secret_of,
)
from sharing.models.shares import (
    KEEP,
    MAX_DOWNLOADS_LIMIT,
    MESSAGE_MAX_LENGTH,
    Share,
    new_share_token,
)
from sharing.models.state import EndState, Fate, locked_now

__all__ = [
    "KEEP",
    "MAX_DOWNLOADS_LIMIT",
    "MAX_FILES_PER_SHARE",
    "MAX_SEALED_METADATA_BYTES",
    "MESSAGE_MAX_LENGTH",
    "BytesToDelete",
    "Download",
    "EndState",
    "Fate",
    "QuotaExceeded",
    "ReactivationRefused",
    "Reservation",
    "ScanState",
    "SealedMetadata",
    "Share",
    "ShareEvent",
    "ShareItem",
    "ShareQuerySet",
    "SharingPolicy",
    "StorageAccount",
    "StoredFile",
    "UploadTooLarge",
    "Visitor",
    "byte_budget",
    "check_sealed_metadata",
    "check_upload",
    "check_wrapped_secret",
    "clean_content_type",
    "clean_file_name",
    "copy_bytes",
    "create_sealed_share",
    "delete_file",
    "delete_stored_bytes",
    "end_owner_shares",
    "expire_overdue",
    "expire_shares",
    "fold_pending",
    "format_duration",
    "locked_now",
    "new_share_token",
    "reactivate",
    "refund_deleted_file",
    "refuse_sealed_changes",
    "resend_allowance",
    "retry_deletions",
    "sealed_metadata_of",
    "sealed_share_ids",
    "stored_address",
    "stored_file_path",
    "wrapped_secret_of",
]
