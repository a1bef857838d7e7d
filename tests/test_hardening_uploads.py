"""Upload types (hardening, item 6): a part sent without a Content-Type is
typed from its name, as before the type was validated."""

import pytest

pytestmark = pytest.mark.django_db


def multipart(name: str, data: bytes, part_type: str | None) -> bytes:
    head = f'--b\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
    if part_type is not None:
        head += f"Content-Type: {part_type}\r\n"
    return head.encode() + b"\r\n" + data + b"\r\n--b--\r\n"


@pytest.mark.parametrize(
    ("name", "part_type", "stored"),
    [
        ("notes.txt", None, "text/plain"),
        ("photo.png", None, "image/png"),
        ("data.unknown-ext", None, "application/octet-stream"),
        ("notes.txt", "application/pdf", "application/pdf"),  # a type given is kept, not guessed
    ],
)
def test_a_part_without_a_type_is_typed_from_its_name(alice_client, name, part_type, stored):
    response = alice_client.generic(
        "POST", "/api/files/", multipart(name, b"hello", part_type), content_type="multipart/form-data; boundary=b"
    )
    assert response.status_code == 201, response.content
    assert response.json()["content_type"] == stored
