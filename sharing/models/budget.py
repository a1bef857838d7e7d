"""A limited link's byte budget: what "N downloads" means in bytes.

A link limited to N downloads may send at most N copies' worth of its
files' bytes (Share.size: each file once; a zip's headers cost nothing),
plus a resend allowance, however they are asked for (whole files, one file
at a time, the zip, resumed ranges, several connections at once). Each response
reserves the bytes of its range before it sends them (one conditional
UPDATE of Share.bytes_left, sharing.models.downloads) and gives back what it
did not send when the client hangs up early; a crash gives nothing back.

The allowance pays for bytes sent twice: what the client's machine (or a
proxy on the way) had taken when the connection broke counts as sent, and
the client asks for it again when it resumes. What never left the server's
own socket buffer is given back (links.delivery). A quarter of the file, at
most RESEND_ALLOWANCE_CAP; always less than one copy, so it never adds a
download.

A link is used up (it ends by its download limit) once its budget holds
less than its smallest file: used_up(), the one rule. On a share of several
files, what the allowance leaves after the last copy may still send a file
smaller than it again: never more bytes than the budget, never another copy
of the share.

An empty file still costs one unit per response (COPY of 0 bytes is 1), so
its limit counts responses.
"""

from django.core.exceptions import ValidationError
from django.db.models import F, Q, Value
from django.db.models.functions import Greatest

# The most a broken connection is assumed to have lost in flight.
RESEND_ALLOWANCE_CAP = 32 * 1024 * 1024


def copy_bytes(size: int) -> int:
    """What one whole copy of a `size`-byte file costs the budget."""
    return max(size, 1)


def resend_allowance(size: int) -> int:
    """What a link may send beyond its copies, for bytes a broken connection
    took but never delivered (always less than one copy of the share)."""
    return min(size // 4, RESEND_ALLOWANCE_CAP)


def byte_budget(max_downloads: int | None, size: int) -> int | None:
    """The whole budget of a link limited to `max_downloads` (None: unlimited)."""
    if max_downloads is None:
        return None
    return max_downloads * copy_bytes(size) + resend_allowance(size)


def charge(counted: int) -> int:
    """What a response whose range holds `counted` bytes of the share's
    files reserves (at least one unit)."""
    return max(counted, 1)


def whole_copies(bytes_left: int | None, size: int) -> int | None:
    """The whole copies `bytes_left` still holds (the downloads left)."""
    if bytes_left is None:
        return None
    return bytes_left // copy_bytes(size)


def used_up(bytes_left: int | None, least: int) -> bool:
    """Whether a limited link's budget is used up: it holds less than its
    smallest file (`least`, Share.least), so no download can be whole. For
    a share of one file that is less than one copy; a share of several
    stays live while one of its files still fits."""
    return bytes_left is not None and bytes_left < copy_bytes(least)


def used_up_q() -> Q:
    """used_up() as a Q over shares (for lists filtered by status)."""
    return Q(bytes_left__lt=Greatest(F("least"), Value(1)))


def bytes_used(*, max_downloads: int | None, bytes_left: int | None, download_count: int, size: int) -> int:
    """What a link has used of any budget so far: for a limited link, its
    budget less what is left; for one without a limit, a whole copy for every
    download it counted (it never kept count of bytes)."""
    if max_downloads is None or bytes_left is None:
        return download_count * copy_bytes(size)
    return byte_budget(max_downloads, size) - bytes_left


def budget_left_after(new_limit: int | None, used: int, size: int) -> int | None:
    """bytes_left for a new limit, given what was used; negative when the
    link already sent more than the new limit allows."""
    budget = byte_budget(new_limit, size)
    return None if budget is None else budget - used


def left_after_new_limit(max_downloads: int | None, before: dict) -> int | None:
    """bytes_left for a new download limit of a share whose columns were
    `before` (max_downloads, bytes_left, download_count, size): its budget
    less what the link already used. Raise ValidationError when it already
    sent more than the new limit allows."""
    size = before["size"]
    used = bytes_used(
        max_downloads=before["max_downloads"],
        bytes_left=before["bytes_left"],
        download_count=before["download_count"],
        size=size,
    )
    left = budget_left_after(max_downloads, used, size)
    if left is not None and left < 0:
        raise ValidationError(
            {
                "max_downloads": f"{used / copy_bytes(size):g} downloads' worth ({used} bytes) were "
                "already sent; the limit cannot be lower."
            }
        )
    return left
