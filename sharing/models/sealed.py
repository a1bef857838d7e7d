"""An end-to-end encrypted share's sealed metadata (docs/encryption.md).

The owner's client encrypts the files' names, types and sizes and the note
to the recipient into one RFC 8188 body, with a key derived from a secret
the server never sees (it travels in the link's #fragment). The server keeps
that body beside the share, made in the share's own transaction, and hands
it to whoever may open the link; the files themselves are stored and
served as any bytes (their ciphertext), so limits, ranges and expiry hold
unchanged.

A link may go without its #fragment when the owner's client wraps the secret
with a key derived from a password (docs/encryption.md, "A password instead
of the fragment"): the wrapped secret is kept on the same row, handed out
with the metadata, and its public half (the key derivation's parameters)
answered to anyone who asks for it, so a recipient can derive the key.
"""

import struct

from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Q
from django.db.models.functions import Length
from django.db.models.lookups import Exact, GreaterThanOrEqual, LessThanOrEqual

from sharing.models.shares import KEEP, Share

# Names, types and sizes of up to 500 files and a 1,000-character note fit
# in well under this; anything larger is not metadata.
MAX_SEALED_METADATA_BYTES = 256 * 1024
# RFC 8188's header (salt 16, record size 4, key id length 1) and one record
# (its 16-byte tag and delimiter) at the least.
HEADER_BYTES = 21
LEAST_BYTES = HEADER_BYTES + 17

# The wrapped secret: version (1) | PBKDF2 iterations (4, big-endian) |
# salt (16) | AES-GCM nonce (12) | the 16-byte secret and its 16-byte tag.
WRAPPED_SECRET_BYTES = 65
WRAPPED_SECRET_VERSION = 1
# Below the lower bound a stolen database makes the password cheap to guess
# offline; above the upper one a recipient's browser spends a minute or more
# deriving the key (600,000 takes about a third of a second).
LEAST_ITERATIONS = 100_000
MOST_ITERATIONS = 10_000_000


class SealedMetadata(models.Model):
    share = models.OneToOneField(Share, primary_key=True, on_delete=models.CASCADE, related_name="sealed")
    blob = models.BinaryField(max_length=MAX_SEALED_METADATA_BYTES, editable=False)
    wrapped_secret = models.BinaryField(max_length=WRAPPED_SECRET_BYTES, null=True, editable=False)

    class Meta:
        verbose_name_plural = "sealed metadata"
        constraints = [
            models.CheckConstraint(
                condition=GreaterThanOrEqual(Length("blob"), LEAST_BYTES), name="sealed_metadata_least_size"
            ),
            models.CheckConstraint(
                condition=LessThanOrEqual(Length("blob"), MAX_SEALED_METADATA_BYTES), name="sealed_metadata_most_size"
            ),
            models.CheckConstraint(
                condition=Q(wrapped_secret__isnull=True) | Q(Exact(Length("wrapped_secret"), WRAPPED_SECRET_BYTES)),
                name="sealed_metadata_wrapped_secret_size",
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


def check_wrapped_secret(wrapped: bytes) -> bytes:
    """Refuse what is not a wrapped secret of this format, or one whose key
    derivation is too cheap to protect it or too dear to open."""
    if len(wrapped) != WRAPPED_SECRET_BYTES:
        raise ValidationError(f"A wrapped secret is {WRAPPED_SECRET_BYTES} bytes; this is {len(wrapped)}.")
    if wrapped[0] != WRAPPED_SECRET_VERSION:
        raise ValidationError(f"A wrapped secret of version {wrapped[0]} is not known: only version 1 is.")
    iterations = wrapped_iterations(wrapped)
    if not LEAST_ITERATIONS <= iterations <= MOST_ITERATIONS:
        raise ValidationError(
            f"A wrapped secret's PBKDF2 iterations are {LEAST_ITERATIONS:,} to {MOST_ITERATIONS:,}; "
            f"this one has {iterations:,}."
        )
    return wrapped


def wrapped_iterations(wrapped: bytes) -> int:
    return struct.unpack(">I", wrapped[1:5])[0]


def wrapped_salt(wrapped: bytes) -> bytes:
    return wrapped[5:21]


def create_sealed_share(*, sealed_metadata: bytes, wrapped_secret: bytes | None = None, **arguments) -> Share:
    """Share.create_for, and the metadata (and the wrapped secret, if any)
    with it: both or neither. A wrapped secret opens only with the password
    whose verifier the share is locked with."""
    check_sealed_metadata(sealed_metadata)
    if wrapped_secret is not None:
        check_wrapped_secret(wrapped_secret)
        if not arguments.get("password"):
            raise ValidationError("A wrapped secret needs the password's verifier as the link's password.")
    with transaction.atomic():
        share = Share.create_for(**arguments)
        SealedMetadata.objects.create(share=share, blob=sealed_metadata, wrapped_secret=wrapped_secret)
    return share


def refuse_sealed_changes(share: Share, *, password, message) -> None:
    """Refuse, field by field, a change an encrypted link cannot take: a note
    in plaintext (it belongs in the sealed metadata, which only the sender
    can write again), or another password for a link whose secret is wrapped
    (no other password would unwrap it: the link could never open again).
    `password` and `message` are Share.change's (KEEP: not changed)."""
    row = SealedMetadata.objects.filter(share_id=share.pk).values("wrapped_secret").first()
    if row is None:
        return
    refused = {}
    if message is not KEEP and message:
        refused["message"] = "An encrypted link's note is inside its sealed metadata: it cannot be set in plaintext."
    if password is not KEEP and row["wrapped_secret"] is not None:
        refused["password"] = (
            "This encrypted link's key is wrapped with its password: another password (or none) would leave it "
            "unopenable. Share the files again to change it."
        )
    if refused:
        raise ValidationError(refused)


def sealed_share_ids(share_ids) -> set[int]:
    """Which of these shares are end-to-end encrypted, in one query: a page
    of links asks once, not once per row."""
    return set(SealedMetadata.objects.filter(share_id__in=list(share_ids)).values_list("share_id", flat=True))


def sealed_metadata_of(share: Share) -> bytes | None:
    blob = SealedMetadata.objects.filter(share_id=share.pk).values_list("blob", flat=True).first()
    return None if blob is None else bytes(blob)


def wrapped_secret_of(share: Share) -> bytes | None:
    wrapped = SealedMetadata.objects.filter(share_id=share.pk).values_list("wrapped_secret", flat=True).first()
    return None if wrapped is None else bytes(wrapped)
