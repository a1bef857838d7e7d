"""The REST API's calls the command makes, as docs/api.md documents them."""

import json
from collections.abc import Iterator
from urllib.parse import urlencode, urlsplit

from microcloud_cli.config import Account
from microcloud_cli.errors import Failure
from microcloud_cli.http import open_request, read_json

PAGE_SIZE = 100


def issue_token(url: str, username: str, password: str) -> str:
    body = urlencode({"username": username, "password": password})
    response = open_request(
        "POST",
        f"{url}/api/auth/token/",
        headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
        body=body,
    )
    return read_json(response)["token"]


class Api:
    def __init__(self, account: Account):
        self.account = account

    def call(self, method: str, path: str, *, data=None, expect=(200,)):
        headers = {"Authorization": f"Token {self.account.token}", "Accept": "application/json"}
        body = None
        if data is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(data)
        return read_json(open_request(method, self.account.url + path, headers=headers, body=body), expect=expect)

    def create_share(self, fields: dict) -> dict:
        return self.call("POST", "/api/shares/", data=fields, expect=(201,))

    def change_share(self, share_id: int, fields: dict) -> dict:
        return self.call("PATCH", f"/api/shares/{share_id}/", data=fields)

    def unshare(self, share_id: int) -> None:
        self.call("DELETE", f"/api/shares/{share_id}/", expect=(204,))

    def shares(self, status: str | None = None) -> Iterator[dict]:
        yield from self._pages("/api/shares/", status=status)

    def files(self) -> Iterator[dict]:
        yield from self._pages("/api/files/")

    def _pages(self, path: str, **filters) -> Iterator[dict]:
        query = {"page_size": PAGE_SIZE, **{name: value for name, value in filters.items() if value}}
        page = self.call("GET", f"{path}?{urlencode(query)}")
        while True:
            yield from page["results"]
            if not page["next"]:
                return
            # The next page's path on our own server (the host it names may be a proxy's).
            parts = urlsplit(page["next"])
            page = self.call("GET", f"{parts.path}?{parts.query}")

    def share_id(self, given: str) -> int:
        """A share named by its id or by its link (or the link's token)."""
        if given.isdigit():
            return int(given)
        token = given
        if "/" in given:
            segments = urlsplit(given).path.split("/")
            token = segments[segments.index("s") + 1] if "s" in segments[:-1] else segments[-1]
        for share in self.shares():
            if share["token"] == token:
                return share["id"]
        raise Failure(f"no share of yours has the link {given}")
