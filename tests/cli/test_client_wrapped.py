"""`microcloud put --encrypt --password` and `get` of the link without its
#fragment, against gunicorn: the link opens with the password alone, the
server holds and logs neither the password nor the secret, a wrong password
is one line and exit 1, and a link missing both its key and a wrapped one
says it is incomplete."""

import subprocess
import unicodedata

import pytest
from microcloud_cli.http import get_following
from microcloud_cli.sealed_downloads import unwrap_secret, wrapped_parameters
from microcloud_cli.sealing import secret_text

from sharing.models import Share, wrapped_secret_of
from tests.cli.commands import COMMAND, microcloud, random_file, sha256

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "Grüße aus Köln, 7 Brücken"  # not ASCII: NFC-normalised UTF-8 on both sides


def put_wrapped(env, *paths, password=PASSWORD):
    done = microcloud(env, "put", "-q", "--encrypt", "--password", password, *map(str, paths))
    lines = done.stdout.strip().splitlines()
    link = lines[-1]
    return link, lines, Share.objects.get(token=link.rsplit("/", 1)[-1])


def secret_of(link: str, password: str) -> bytes:
    """What the recipient's side unwraps, to look for it where it must not be."""
    secret, _ = unwrap_secret(link, wrapped_parameters(link), password)
    return secret


def status_with(link: str, password: str) -> int:
    response = get_following(f"{link}/sealed", headers={"X-Share-Password": password})
    response.read()
    return response.status


def test_put_with_a_password_then_get_without_the_fragment_round_trips(env, tmp_path):
    first = random_file(tmp_path / "quarterly-report.pdf", 200_000)
    second = random_file(tmp_path / "scan.bin", 70_000)
    link, lines, share = put_wrapped(env, first, second)
    assert "#" not in link
    assert lines[-2].endswith("The link opens with its password: whoever has both reads the files.")
    assert wrapped_secret_of(share) is not None
    # The link's password on the server is the verifier, not the password.
    assert status_with(link, PASSWORD) == 403

    out = tmp_path / "out"
    out.mkdir()
    done = microcloud(env, "get", "-q", link, "--password", PASSWORD, "-d", str(out))
    assert done.stdout.split() == [str(out / "quarterly-report.pdf"), str(out / "scan.bin")]
    assert sha256(out / "quarterly-report.pdf") == sha256(first)
    assert sha256(out / "scan.bin") == sha256(second)

    # From the environment, as scripts give it (and the NFD spelling of the
    # same password opens it too).
    again = tmp_path / "again"
    again.mkdir()
    scripted = {**env, "MICROCLOUD_LINK_PASSWORD": unicodedata.normalize("NFD", PASSWORD)}
    assert microcloud(scripted, "get", "-q", link, "-d", str(again)).returncode == 0
    assert sha256(again / "scan.bin") == sha256(second)

    secret = secret_text(secret_of(link, PASSWORD))
    log = (tmp_path / "web.log").read_text()
    assert "/key" in log  # the log is the one the requests went to
    for never in (PASSWORD, secret, PASSWORD.encode("utf-8").decode("latin-1")):
        assert never not in log


def test_a_wrong_password_is_one_line_and_exit_1(env, tmp_path):
    link, _, _ = put_wrapped(env, random_file(tmp_path / "a.bin", 1000))
    done = microcloud(
        env, "get", "-q", link, "--password", "Grüße aus Köln, 8 Brücken", "-d", str(tmp_path), check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "microcloud: Wrong password.\n")
    assert list(tmp_path.glob(".microcloud-*")) == []


def test_without_a_password_anywhere_it_says_how_to_give_one(env, tmp_path):
    link, _, _ = put_wrapped(env, random_file(tmp_path / "a.bin", 1000))
    # No terminal to ask on: standard input is empty and there is no controlling terminal.
    done = subprocess.run(
        [COMMAND, "get", "-q", link, "-d", str(tmp_path)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,
    )
    assert done.returncode == 1
    assert done.stderr == "microcloud: this link opens with its password: give --password or MICROCLOUD_LINK_PASSWORD\n"


def test_an_encrypted_link_without_its_key_or_a_wrapped_one_is_incomplete(env, tmp_path):
    whole = microcloud(env, "put", "-q", "--encrypt", str(random_file(tmp_path / "a.bin", 1000)))
    link = whole.stdout.strip().splitlines()[-1].split("#")[0]
    out = tmp_path / "out"
    out.mkdir()
    done = microcloud(env, "get", "-q", link, "-d", str(out), check=False)
    assert (done.returncode, done.stderr) == (
        1,
        "microcloud: this encrypted link is incomplete: its key, after the #, is missing; copy the whole link\n",
    )
    assert list(out.iterdir()) == []  # not the ciphertext under a neutral name


def test_a_plain_link_still_downloads_without_a_fragment(env, tmp_path):
    source = random_file(tmp_path / "plain.bin", 5000)
    link = microcloud(env, "put", "-q", "--password", "blue kite", str(source)).stdout.strip().splitlines()[-1]
    out = tmp_path / "out"
    out.mkdir()
    done = microcloud(env, "get", "-q", link, "--password", "blue kite", "-d", str(out))
    assert done.stdout.split() == [str(out / "plain.bin")]
    assert sha256(out / "plain.bin") == sha256(source)


def test_help_tells_of_the_password_instead_of_the_fragment():
    put = subprocess.run([COMMAND, "put", "--help"], capture_output=True, text=True, check=True).stdout
    assert "with --encrypt it also wraps the key" in " ".join(put.split())
    get = subprocess.run([COMMAND, "get", "--help"], capture_output=True, text=True, check=True).stdout
    assert "MICROCLOUD_LINK_PASSWORD" in get
    assert "without its #key" in " ".join(get.split())
