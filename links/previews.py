"""Which files a link's page previews, and as what.

A preview is the file's bytes shown in the browser instead of saved, sent
through the same checks and byte budget as a download (links.downloads),
always with `Content-Security-Policy: sandbox` and nosniff: the bytes are
the uploader's, so nothing in them may run as a page of this origin. Text
of any kind (HTML included) is shown as plain text, never rendered; SVG
only as an image (an <img> never runs its script, and the sandbox stops it
when opened on its own).

Links with a download limit show no previews: every preview sends the
file's bytes, and would spend the recipient's downloads on looking.

An encrypted link's files have no type the server can read: its page
decrypts the metadata, and asks for the preview of each image it names
there, then decrypts it into a blob: URL itself. So any of its files up to
SEALED_PREVIEW_MAX is sent as a preview (ciphertext, counted as a preview,
not a download).
"""

from dataclasses import dataclass

from links.payloads import FilePayload
from sharing.models import Share, StoredFile, sealed_metadata_of
from sharing.models.downloads import Sending

# Types browsers show safely, by the element the page shows them in.
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/svg+xml", "image/bmp"}
AUDIO_TYPES = {"audio/mpeg", "audio/ogg", "audio/wav", "audio/webm", "audio/flac", "audio/aac", "audio/mp4"}
VIDEO_TYPES = {"video/mp4", "video/webm", "video/ogg"}
PLAIN_TEXT = "text/plain; charset=utf-8"
# Past this, a text preview is a download in disguise.
TEXT_PREVIEW_MAX = 1024 * 1024
# The largest image an encrypted link's page decrypts whole in memory to show.
SEALED_PREVIEW_MAX = 20 * 1024 * 1024
# Its ciphertext: a 21-byte header and 17 bytes for each record of 65519.
SEALED_PREVIEW_CIPHERTEXT_MAX = 21 + SEALED_PREVIEW_MAX + 17 * -(-SEALED_PREVIEW_MAX // 65519)


def _essence(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def preview_kind(stored: StoredFile) -> str | None:
    """How the page previews `stored`: "image", "audio", "video", "pdf",
    "text", or None (no preview)."""
    essence = _essence(stored.content_type)
    if essence in IMAGE_TYPES:
        return "image"
    if essence in AUDIO_TYPES:
        return "audio"
    if essence in VIDEO_TYPES:
        return "video"
    if essence == "application/pdf":
        return "pdf"
    if (essence.startswith("text/") or essence in {"application/json", "application/xml"}) and (
        stored.size <= TEXT_PREVIEW_MAX
    ):
        return "text"
    return None


def previews_allowed(share: Share) -> bool:
    """Whether the link shows previews at all (not when it has a download limit)."""
    return share.max_downloads is None


@dataclass(frozen=True)
class PreviewPayload(FilePayload):
    """A file sent to be shown, not saved: text always as plain text."""

    @property
    def content_type(self) -> str:
        return PLAIN_TEXT if preview_kind(self.stored) == "text" else self.stored.content_type

    @property
    def sending(self) -> Sending:
        return Sending(file_id=self.stored.pk, preview=True)


def preview_of(position: int, share: Share) -> PreviewPayload | None:
    """The preview of the file at `position`, or None when it has none."""
    stored = share.file_at(position)
    if stored is None or not previews_allowed(share):
        return None
    if sealed_metadata_of(share) is not None:
        return PreviewPayload(stored) if stored.size <= SEALED_PREVIEW_CIPHERTEXT_MAX else None
    return PreviewPayload(stored) if preview_kind(stored) is not None else None
