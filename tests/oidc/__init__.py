"""A real OpenID provider for the sign-in tests: tests/oidc/provider.mjs
(panva's oidc-provider under Node) in its own process on 127.0.0.1.

`installed()` runs `npm ci` in this folder when its node_modules is missing
(a fresh clone), once per test process; `OidcProvider` starts the script,
waits for its discovery document, changes its accounts, and stops it.
"""

from __future__ import annotations

import fcntl
import html
import json
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
import requests

HERE = Path(__file__).resolve().parent
NODE = os.environ.get("NODE") or shutil.which("node") or "/usr/bin/node"
CLIENT_ID = "microcloud-tests"
CLIENT_SECRET = "a-client-secret-for-the-tests-only"
CALLBACK_PATH = "/signin/oidc/callback/"
# npm ci of two packages: seconds on a warm cache, under a minute on a cold one.
INSTALL_TIMEOUT = 300
START_TIMEOUT = 30

_install_lock = threading.Lock()
_installed = False


def installed() -> None:
    """Install the provider's packages from package-lock.json unless they are
    there; under a file lock, as pytest-xdist's workers may all ask at once."""
    global _installed
    with _install_lock:
        if _installed:
            return
        require_node()
        with open(HERE / ".npm-ci.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (HERE / "node_modules" / "oidc-provider").is_dir():
                subprocess.run(
                    [shutil.which("npm"), "ci", "--no-audit", "--no-fund"],
                    cwd=HERE,
                    check=True,
                    timeout=INSTALL_TIMEOUT,
                    capture_output=True,
                )
        _installed = True


def require_node() -> None:
    """Skip without Node and npm, except under CI (.ci/run installs them), where it fails."""
    if Path(NODE).is_file() and shutil.which("npm"):
        return
    message = f"the OpenID provider of the tests needs Node ({NODE}) and npm"
    if os.environ.get("CI") in {"true", "TRUE", "True", "1", "yes"}:
        pytest.fail(message)
    pytest.skip(message)


@dataclass
class OidcProvider:
    redirect_uris: list[str]
    post_logout_redirect_uris: list[str] = field(default_factory=list)
    accounts: dict[str, dict] = field(default_factory=dict)
    issuer: str = ""
    process: subprocess.Popen | None = None

    def start(self) -> OidcProvider:
        installed()
        config = {
            "port": 0,
            "clientId": CLIENT_ID,
            "clientSecret": CLIENT_SECRET,
            "redirectUris": self.redirect_uris,
            "postLogoutRedirectUris": self.post_logout_redirect_uris,
            "accounts": self.accounts,
        }
        self.process = subprocess.Popen(
            [NODE, str(HERE / "provider.mjs"), json.dumps(config)],
            cwd=HERE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        line = self.process.stdout.readline()
        if not line:
            self.stop()
            raise RuntimeError("the OpenID provider of the tests exited before it listened")
        self.issuer = json.loads(line)["issuer"]
        self.wait_for_discovery()
        return self

    def wait_for_discovery(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                if requests.get(self.discovery_url, timeout=2).ok:
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"no discovery document at {self.discovery_url} after {START_TIMEOUT} s")
            time.sleep(0.05)

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    def set_account(self, account_id: str, **fields) -> None:
        """Make or replace an account (password, email, groups, tamper) at the running provider."""
        response = requests.put(f"{self.issuer}/_test/accounts/{account_id}", json=fields, timeout=5)
        response.raise_for_status()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def settings(self) -> dict:
        """The settings a site signing in through this provider runs with."""
        return {
            "OIDC_ISSUER": self.issuer,
            "OIDC_CLIENT_ID": CLIENT_ID,
            "OIDC_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_PROVIDER_NAME": "Test Provider",
            "OIDC_SCOPES": "openid email profile groups",
        }


FORM_ACTION = re.compile(r'<form[^>]*action="([^"]+)"')
ABORT_LINK = re.compile(r'href="([^"]+/abort)"')


def provider_answer(authorize_url: str, login: str, password: str, *, abort: bool = False) -> str:
    """Sign in at the provider as a browser would, without one: follow its
    redirects, fill its login form (or press its Cancel when `abort`), and
    return the URL it sends back to the site (the callback, with a code or an error)."""
    browser = requests.Session()
    issuer = "{0.scheme}://{0.netloc}".format(urlsplit(authorize_url))
    url, data = authorize_url, None
    for _ in range(10):
        response = browser.request("POST" if data else "GET", url, data=data, allow_redirects=False, timeout=10)
        data = None
        if response.is_redirect:
            url = urljoin(url, response.headers["Location"])
            if not url.startswith(issuer):
                return url
            continue
        page = html.unescape(response.text)
        if abort and ABORT_LINK.search(page):
            url = urljoin(url, ABORT_LINK.search(page).group(1))
            continue
        action = FORM_ACTION.search(page)
        if response.status_code != 200 or action is None:
            raise AssertionError(f"the provider answered {response.status_code} at {url}: {response.text[:300]}")
        url, data = urljoin(url, action.group(1)), {"prompt": "login", "login": login, "password": password}
    raise AssertionError("the provider never sent the browser back")
