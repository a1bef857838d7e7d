"""The Content-Disposition of a stored file sent as an attachment.

Django's helper sends a name that is not plain ASCII only as `filename*`
(RFC 8187). RFC 6266 (section 4.3) asks for a plain `filename=` beside it
for clients that do not read `filename*`; they save the ASCII fallback.
"""

import os
import unicodedata

from django.utils.http import content_disposition_header

FALLBACK_NAME = "download"


def ascii_fallback(name: str) -> str:
    """`name` in printable ASCII: accents dropped (é to e), other characters
    to "_", quotes and backslashes (which would need escaping) to "_"."""
    decomposed = unicodedata.normalize("NFKD", name)
    kept = "".join(c for c in decomposed if not unicodedata.combining(c))
    plain = "".join(c if " " <= c <= "~" and c not in '"\\' else "_" for c in kept).strip()
    stem, extension = os.path.splitext(plain)
    return plain if stem.strip("_. ") else FALLBACK_NAME + extension


def attachment(name: str) -> str:
    """The header's value: Django's for a plain ASCII name, else the
    UTF-8 `filename*` with an ASCII `filename=` fallback before it."""
    return _disposition(True, name)


def inline_disposition(name: str) -> str:
    """The same for a file shown in the browser (a preview), named if saved."""
    return _disposition(False, name)


def _disposition(as_attachment: bool, name: str) -> str:
    header = content_disposition_header(as_attachment, name)
    kind = "attachment" if as_attachment else "inline"
    if "filename*=" not in header:
        return header
    return f'{kind}; filename="{ascii_fallback(name)}"; ' + header.removeprefix(f"{kind}; ")
