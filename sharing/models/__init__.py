"""Files, shares and the sharing policy: the rules of the product, one
concept per module. Everything is importable from sharing.models."""

from sharing.models.downloads import MAX_FREE_RESUMES, RESUME_GRACE, Download, resume_slack
from sharing.models.events import ShareEvent, Visitor, stored_address
from sharing.models.files import (
    StoredFile,
    UploadTooLarge,
    check_upload,
    clean_content_type,
    clean_file_name,
    delete_stored_bytes,
    stored_file_path,
)
from sharing.models.policy import SharingPolicy, format_duration
from sharing.models.reactivation import ReactivationRefused
from sharing.models.shares import KEEP, MAX_DOWNLOADS_LIMIT, Share, ShareQuerySet, locked_now, new_share_token
from sharing.models.tally import fold_pending

__all__ = [
    "KEEP",
    "MAX_DOWNLOADS_LIMIT",
    "MAX_FREE_RESUMES",
    "RESUME_GRACE",
    "Download",
    "ReactivationRefused",
    "Share",
    "ShareEvent",
    "ShareQuerySet",
    "SharingPolicy",
    "StoredFile",
    "UploadTooLarge",
    "Visitor",
    "check_upload",
    "clean_content_type",
    "clean_file_name",
    "delete_stored_bytes",
    "fold_pending",
    "format_duration",
    "locked_now",
    "new_share_token",
    "resume_slack",
    "stored_address",
    "stored_file_path",
]
