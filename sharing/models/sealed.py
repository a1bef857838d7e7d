"""An end-to-end encrypted share's sealed metadata (docs/encryption.md).

The owner's client encrypts the files' names, types and sizes and the note
to the recipient into one RFC 8188 body, with a key derived from a secret
the server never sees (it travels in the link's #fragment). The server keeps
that body beside the share, made in the share's own transaction, and hands
it to whoever may open the link; the files themselves are stored and
served as any bytes (their ciphertext), so limits, ranges and expiry hold
unchanged.
"""

import struct

from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models.functions import Length
from django.db.models.lookups import GreaterThanOrEqual, LessThanOrEqual

from sharing.models.shares import Share

# Names, types and sizes of up to 500 files and a 1,000-character note fit
# in well under this; anything larger is not metadata.
MAX_SEALED_METADATA_BYTES = 256 * 1024
# RFC 8188's header (salt 16, record size 4, key id length 1) and one record
# (its 16-byte tag and delimiter) at the least.
HEADER_BYTES = 21
LEAST_BYTES = HEADER_BYTES + 17


class SealedMetadata(models.Model):
    share = models.OneToOneField(Share, primary_key=True, on_delete=models.CASCADE, related_name="sealed")
    blob = models.BinaryField(max_length=MAX_SEALED_METADATA_BYTES, editable=False)

    class Meta:
        verbose_name_plural = "sealed metadata"
        constraints = [
            models.CheckConstraint(
                condition=GreaterThanOrEqual(Length("blob"), LEAST_BYTES), name="sealed_metadata_least_size"
            ),
            models.CheckConstraint(
                condition=LessThanOrEqual(Length("blob"), MAX_SEALED_METADATA_BYTES), name="sealed_metadata_most_size"
            ),
        ]

    def __str__(self):
        return f"Sealed metadata of share {self.share_id}"


def check_sealed_metadata(blob: bytes) -> bytes:
    """Refuse what cannot be an RFC 8188 body of this format: the server
    cannot read it, but it can tell a mistake (plain JSON, an empty string,
    a truncated paste) from ciphertext."""
    if len(blob) > MAX_SEALED_METADATA_BYTES:
        raise ValidationError(f"Sealed metadata is at most {MAX_SEALED_METADATA_BYTES} bytes; this is {len(blob)}.")
    if len(blob) < LEAST_BYTES:
        raise ValidationError(f"Sealed metadata is an RFC 8188 body of at least {LEAST_BYTES} bytes.")
    record_size, key_id_length = struct.unpack(">IB", blob[16:HEADER_BYTES])
    if record_size < 18 or key_id_length != 0:
        raise ValidationError("Sealed metadata must start with an RFC 8188 aes128gcm header without a key id.")
    return blob


def create_sealed_share(*, sealed_metadata: bytes, **arguments) -> Share:
    """Share.create_for, and the metadata with it: both or neither."""
    check_sealed_metadata(sealed_metadata)
    with transaction.atomic():
        share = Share.create_for(**arguments)
        SealedMetadata.objects.create(share=share, blob=sealed_metadata)
    return share


def sealed_share_ids(share_ids) -> set[int]:
    """Which of these shares are end-to-end encrypted, in one query: a page
    of links asks once, not once per row."""
    return set(SealedMetadata.objects.filter(share_id__in=list(share_ids)).values_list("share_id", flat=True))


def sealed_metadata_of(share: Share) -> bytes | None:
    blob = SealedMetadata.objects.filter(share_id=share.pk).values_list("blob", flat=True).first()
    return None if blob is None else bytes(blob)
