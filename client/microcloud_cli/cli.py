"""`microcloud`: thin subcommands over the API, the tus uploads and the
public link. Every failure is one line on standard error and exit 1."""

import argparse
import getpass
import mimetypes
import os
import sys
from pathlib import Path

from microcloud_cli import __version__, config
from microcloud_cli.api import Api, issue_token
from microcloud_cli.downloads import fetch
from microcloud_cli.errors import Failure
from microcloud_cli.sealed_downloads import fetch_sealed, is_sealed, split_link, unwrap_secret, wrapped_parameters
from microcloud_cli.sealing import EncryptedFile, new_secret, seal_metadata, secret_from_text, secret_text
from microcloud_cli.units import lifetime
from microcloud_cli.uploads import Remembered, Uploader
from microcloud_cli.wrapping import wrap

ENVIRONMENT = """\
The server and the token come from MICROCLOUD_URL and MICROCLOUD_TOKEN, or
else from what `microcloud login` saved (config.json in $XDG_CONFIG_HOME/microcloud,
~/.config/microcloud by default, readable by you alone). The password of a
link sent without its #key comes from --password, else MICROCLOUD_LINK_PASSWORD,
else is asked for."""


def login(args) -> None:
    url = config.server_url(args.url)
    username = args.username or input("Username: ")
    password = os.environ.get("MICROCLOUD_PASSWORD") or getpass.getpass("Password: ")
    token = issue_token(url, username, password)
    path = config.save(url, token)
    print(f"Signed in to {url} as {username}; the token is kept in {path}.")


def put(args) -> None:
    fields = {}
    if args.expires:
        fields |= lifetime(args.expires)
    if args.limit is not None:
        fields["max_downloads"] = args.limit
    if args.password is not None:
        fields["password"] = args.password
    if args.message is not None:
        fields["message"] = args.message
    paths = [Path(name) for name in args.files]
    for path in paths:
        if not path.is_file():
            raise Failure(f"{path}: no such file")
    account = config.account()
    uploader = Uploader(account, quiet=args.quiet)
    if args.encrypt:
        share, secret = put_encrypted(account, uploader, paths, fields, ephemeral=args.ephemeral)
        if "wrapped_secret" in share:
            print(f"Expires {share['expires_at']}. The link opens with its password: whoever has both reads the files.")
            print(share["url"])
            return
        print(f"Expires {share['expires_at']}. The key is after the #: whoever has the whole link reads the files.")
        print(f"{share['url']}#{secret_text(secret)}")
        return
    ids = [uploader.upload(path, ephemeral=args.ephemeral) for path in paths]
    share = Api(account).create_share({"files": ids, **fields})
    print(f"Expires {share['expires_at']}.")
    print(share["url"])


def put_encrypted(account, uploader: Uploader, paths: list[Path], fields: dict, *, ephemeral: bool):
    """Each file uploaded as its RFC 8188 body under a neutral name; the real
    names, sizes and the note sealed with the link's secret. The secret of an
    unfinished put is remembered (like its uploads, readable by the user
    alone), so that running it again resumes the same bodies."""
    remembered = uploader.remembered
    session = "sealed|" + "|".join(Remembered.key(account.url, path) for path in paths)
    secret = secret_from_text(remembered.get(session) or secret_text(new_secret()))
    remembered.put(session, secret_text(secret))
    ids = []
    for position, path in enumerate(paths, start=1):
        body = EncryptedFile(path, secret, position)
        ids.append(uploader.upload(path, ephemeral=ephemeral, source=body, name=f"encrypted-{position}"))
    described = [
        {"name": path.name, "type": mimetypes.guess_type(path.name)[0] or "application/octet-stream", "size": size}
        for path, size in ((path, path.stat().st_size) for path in paths)
    ]
    sealed = seal_metadata(secret, described, fields.pop("message", ""))
    wrapping = {}
    if "password" in fields:
        # The server gets the verifier as the link's password, never the password.
        fields["password"], wrapping["wrapped_secret"] = wrap(secret, fields["password"])
    share = Api(account).create_share({"files": ids, "sealed_metadata": sealed, **fields, **wrapping})
    remembered.forget(session)
    return share | wrapping, secret


def link_password(given: str | None) -> str:
    """A wrapped link's password: given, else from the environment (for
    scripts), else asked without echo on a terminal."""
    password = given or os.environ.get("MICROCLOUD_LINK_PASSWORD")
    if password:
        return password
    if sys.stdin.isatty():
        try:
            return getpass.getpass("Link password: ")
        except EOFError:
            pass
    raise Failure("this link opens with its password: give --password or MICROCLOUD_LINK_PASSWORD")


def get(args) -> None:
    base, fragment = split_link(args.link)
    if not fragment:
        parameters = wrapped_parameters(base)
        if parameters is not None:
            secret, verifier = unwrap_secret(base, parameters, link_password(args.password))
            fetch_encrypted(args, base, secret, verifier)
            return
        if is_sealed(base, args.password):
            raise Failure("this encrypted link is incomplete: its key, after the #, is missing; copy the whole link")
    if fragment:
        fetch_encrypted(args, base, secret_from_text(fragment), args.password)
        return
    target = fetch(
        args.link,
        folder=Path(args.directory),
        output=Path(args.output) if args.output else None,
        password=args.password,
        quiet=args.quiet,
    )
    print(target)


def fetch_encrypted(args, base: str, secret: bytes, password: str | None) -> None:
    if args.output:
        raise Failure("-o names one file; an encrypted link is written under its files' own names (use -d)")
    for target in fetch_sealed(base, secret, folder=Path(args.directory), password=password, quiet=args.quiet):
        print(target)


def ls(args) -> None:
    api = Api(config.account())
    names = {stored["id"]: stored["name"] for stored in api.files()}
    status = None if args.status == "all" else args.status
    for share in api.shares(status=status):
        files = ", ".join(names.get(file_id, "(deleted)") for file_id in share["files"]) or "(no file)"
        downloads = str(share["download_count"])
        if share.get("max_downloads") is not None:
            downloads += f"/{share['max_downloads']}"
        print(f"{share['id']}\t{share['status']}\t{share['expires_at']}\t{downloads}\t{files}\t{share['url']}")


def unshare(args) -> None:
    api = Api(config.account())
    for given in args.shares:
        api.unshare(api.share_id(given))
        print(f"Unshared {given}.")


def extend(args) -> None:
    api = Api(config.account())
    share = api.change_share(api.share_id(args.share), lifetime(args.expires))
    print(f"{share['url']} now expires {share['expires_at']}.")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="microcloud",
        description="Share files through a microcloud server with links that expire.",
        epilog=ENVIRONMENT,
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = top.add_subparsers(dest="command", required=True, metavar="command")

    def command(name, function, text):
        sub = commands.add_parser(name, help=text, description=text, epilog=ENVIRONMENT)
        sub.set_defaults(run=function)
        return sub

    sub = command("login", login, "Get an API token with your username and password, and keep it.")
    sub.add_argument("--url", help="the server, e.g. https://files.example.com (else MICROCLOUD_URL)")
    sub.add_argument("--username", help="asked for when not given")

    sub = command("put", put, "Upload files (resumable) and share them with one link, printed on the last line.")
    sub.add_argument("files", nargs="+", metavar="FILE")
    sub.add_argument(
        "--expires", help="3600 (seconds), 90m, 2h, 7d, or 2026-12-31T18:00:00Z; else the server's default"
    )
    sub.add_argument("--limit", type=int, help="how many downloads the link allows in all")
    sub.add_argument(
        "--password",
        help="a password the link asks for; with --encrypt it also wraps the key, and the link is printed without "
        "its #key (whoever has the link and the password reads the files)",
    )
    sub.add_argument("--message", help="a note shown to the recipient")
    sub.add_argument("--ephemeral", action="store_true", help="delete the files once the link ends")
    sub.add_argument(
        "--encrypt",
        action="store_true",
        help="end-to-end: encrypt here; the key is only in the link's #fragment (docs/encryption.md)",
    )
    sub.add_argument("-q", "--quiet", action="store_true", help="no progress bar")

    sub = command(
        "get",
        get,
        "Download a link (resuming a download cut short; decrypting an encrypted link's files) and print each "
        "path written.",
    )
    sub.add_argument("link")
    sub.add_argument("-o", "--output", help="the path to write (else the file's own name)")
    sub.add_argument("-d", "--directory", default=".", help="where to write it (default: here)")
    sub.add_argument(
        "--password",
        help="the link's password; an encrypted link without its #key opens with it (else "
        "MICROCLOUD_LINK_PASSWORD, else asked)",
    )
    sub.add_argument("-q", "--quiet", action="store_true", help="no progress bar")

    sub = command("ls", ls, "List your links, newest first: id, status, expiry, downloads, files, link.")
    sub.add_argument("--status", choices=["active", "expired", "unshared", "all"], default="active")

    sub = command("unshare", unshare, "End links now (by id or link).")
    sub.add_argument("shares", nargs="+", metavar="SHARE")

    sub = command("extend", extend, "Give a link a new expiry, counted from now (by id or link).")
    sub.add_argument("share", metavar="SHARE")
    sub.add_argument("--expires", required=True, help="3600 (seconds), 90m, 2h, 7d, or an ISO 8601 moment")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        args.run(args)
    except Failure as failure:
        print(f"microcloud: {failure}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("microcloud: stopped; run the same command again to resume", file=sys.stderr)
        return 130
    return 0
