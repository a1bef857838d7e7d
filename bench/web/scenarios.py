"""What the web benchmark requests, and one pass over every scenario.

Floor scenarios are what the same server does with no work of ours: a view
that answers "ok" through the whole middleware stack, and WhiteNoise serving
a static file. Each of our scenarios names the floor it is compared with
(its yardstick) and the figure compared: requests/s for small answers, MB/s
for large files. A scenario whose feature does not exist yet has no path: it
is listed as "not built yet", and gets measured once it has one.

One scenario is compared with another of ours instead: the zip of a share's
several files (/s/<token>/all.zip) with the single large file, by MB/s
(report.py's target). Before its cells, one whole zip is downloaded and
checked (zipcheck.py), outside the timed part.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass

from bench.web import load, upload, zipcheck
from bench.web.front import NGINX_STATIC_PREFIX
from bench.web.plan import Plan
from bench.web.server import Server

FLOOR_VIEW = "/bench/floor"  # bench/web/urls.py
STATIC_PREFIX = "/static/bench/"  # files put in the bench's own STATIC_ROOT
SIZES = ("small", "medium", "large")
ZIP_KEY = "download_zip"  # the share of several files, sent as all.zip
YARDSTICK_CONNECTIONS = 16  # where the targets are read


@dataclass(frozen=True)
class Context:
    """What a pass knows: the plan and what the seeder created."""

    plan: Plan
    seeded: dict

    def size_label(self, size: str) -> str:
        return human_bytes(getattr(self.plan, f"{size}_bytes"))


@dataclass(frozen=True)
class Scenario:
    key: str
    label: str  # {small}, {medium}, {large}: the plan's file sizes; {zip}: "10 x 10 MB"
    floor: bool
    path: Callable[[Context], str] | None  # None: not built yet
    method: str = "GET"
    auth: str | None = None  # "reader" or "writer": whose API token is sent
    body: Callable[[Context], str] | None = None
    yardstick: str | None = None
    metric: str = "req_per_s"
    note: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    # Through nginx in front of a gunicorn with DOWNLOAD_OFFLOAD on (front.py).
    behind_nginx: bool = False


def _static(size: str) -> Callable[[Context], str]:
    return lambda ctx: f"{STATIC_PREFIX}{size}.bin"


def _link(size: str) -> Callable[[Context], str]:
    return lambda ctx: f"/s/{ctx.seeded['links'][size]}"


def _zip_path(ctx: Context) -> str:
    return f"/s/{ctx.seeded['links']['zip']}/all.zip"


def _share_body(ctx: Context) -> str:
    return json.dumps({"file": ctx.seeded["writer_file"], "expires_in": 3600})


SCENARIOS = [
    Scenario("floor_view", 'floor: a view returning "ok" (same middleware)', True, lambda ctx: FLOOR_VIEW),
    *(
        Scenario(
            f"static_{size}",
            f"floor: WhiteNoise static file, {{{size}}}",
            True,
            _static(size),
            yardstick="floor_view" if size == "small" else None,
        )
        for size in SIZES
    ),
    Scenario("download_small", "GET /s/<token>, {small}, one hot link", False, _link("small"), yardstick="floor_view"),
    Scenario(
        "download_limited",
        "GET /s/<token>, {small}, link with a download limit",
        False,
        _link("limited"),
        yardstick="floor_view",
    ),
    *(
        Scenario(
            f"download_{size}",
            f"GET /s/<token>, {{{size}}}",
            False,
            _link(size),
            yardstick=f"static_{size}",
            metric="mb_per_s",
        )
        for size in ("medium", "large")
    ),
    # Right after download_large: at each concurrency the two are measured
    # one after the other, so a busy spell of the machine tends to hit both.
    Scenario(
        ZIP_KEY,
        "GET /s/<token>/all.zip, {zip} files as one zip",
        False,
        _zip_path,
        metric="mb_per_s",
    ),
    Scenario(
        "landing",
        "GET /s/<token> as a browser (landing page)",
        False,
        _link("small"),
        yardstick="floor_view",
        headers=(("Accept", "text/html,application/xhtml+xml,*/*;q=0.8"),),
    ),
    Scenario(
        "api_create",
        "POST /api/shares/",
        False,
        lambda ctx: "/api/shares/",
        method="POST",
        auth="writer",
        body=_share_body,
        yardstick="floor_view",
    ),
    Scenario(
        "api_list",
        "GET /api/shares/ (a page of {list_shares})",
        False,
        lambda ctx: "/api/shares/",
        auth="reader",
        yardstick="floor_view",
    ),
    Scenario(
        "nginx_static_large",
        "floor: nginx serving the file itself, {large}",
        True,
        lambda ctx: f"{NGINX_STATIC_PREFIX}large.bin",
        behind_nginx=True,
    ),
    Scenario(
        "offload_large",
        "GET /s/<token>, {large}, X-Accel-Redirect behind nginx",
        False,
        _link("large"),
        yardstick="nginx_static_large",
        metric="mb_per_s",
        behind_nginx=True,
    ),
]
BY_KEY = {s.key: s for s in SCENARIOS}


def label(scenario: Scenario, plan: Plan) -> str:
    sizes = {size: human_bytes(getattr(plan, f"{size}_bytes")) for size in SIZES}
    return scenario.label.format(**sizes, zip=zip_label(plan), list_shares=plan.list_shares)


def zip_label(plan: Plan) -> str:
    return f"{plan.zip_files} x {human_bytes(plan.zip_file_bytes)}"


def human_bytes(n: int) -> str:
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= factor and n % factor == 0:
            return f"{n // factor} {unit}"
    for unit, factor in (("GB", 10**9), ("MB", 10**6)):
        if n >= factor:
            return f"{n / factor:g} {unit}"
    return f"{n} B"


def _request(scenario: Scenario, ctx: Context) -> dict:
    headers = dict(scenario.headers)
    if scenario.auth:
        headers["Authorization"] = f"Token {ctx.seeded[scenario.auth + '_token']}"
    if scenario.body:
        headers["Content-Type"] = "application/json"
    return {
        "method": scenario.method,
        "body": scenario.body(ctx) if scenario.body else "",
        "headers": headers,
    }


def _load(server: Server, s: Scenario, ctx: Context, wrk: str, script, connections: int, seconds: int) -> dict:
    url = server.base_url + s.path(ctx)
    return load.run(wrk, script, url, connections=connections, seconds=seconds, **_request(s, ctx))


def run_pass(
    server: Server, ctx: Context, wrk: str, script, chosen: list[str], say, *, behind_nginx: bool = False
) -> dict:
    """Every chosen scenario of this server (gunicorn alone, or nginx in
    front) at every concurrency of the plan, then the uploads."""
    plan = ctx.plan
    runnable = [s for s in SCENARIOS if s.key in chosen and s.path is not None and s.behind_nginx == behind_nginx]
    if plan.warmup_seconds:
        # Every worker thread opens its database connection and imports what
        # the view needs before any cell counts.
        say(f"warm-up: {len(runnable)} scenarios x {plan.warmup_seconds} s")
        for s in runnable:
            try:
                _load(server, s, ctx, wrk, script, 16, plan.warmup_seconds)
            except RuntimeError as exc:
                say(f"warm-up of {s.key} failed: {exc}")
    out: dict = {}
    if any(s.key == ZIP_KEY for s in runnable):
        say(f"zip check: one whole GET of {zip_label(plan)} as all.zip, untimed")
        out["zip_check"] = zipcheck.check(
            server.base_url, _zip_path(ctx), files=plan.zip_files, file_bytes=plan.zip_file_bytes
        )
        say(f"  zip check: {zipcheck.brief(out['zip_check'])}")
    cells: dict[str, dict] = {s.key: {} for s in runnable}
    # Concurrency outermost: a floor and the views compared with it are
    # measured within a minute or two, so a busy spell of the machine tends
    # to hit both.
    for connections in plan.connections:
        for s in runnable:
            before = server.reset_peaks()
            try:
                result = _load(server, s, ctx, wrk, script, connections, plan.seconds)
            except RuntimeError as exc:
                result = {"error": str(exc)}
            result["workers"] = server.peaks(before)
            cells[s.key][str(connections)] = result
            say(f"  {s.key} @{connections}: {_brief(result)}")
    unbuilt = [s for s in SCENARIOS if s.key in chosen and s.path is None and s.behind_nginx == behind_nginx]
    out.update(cells=cells, not_built={s.key: s.note for s in unbuilt})
    if "uploads" in chosen and not behind_nginx:
        out.update(run_uploads(server, ctx, say))
    return out


def run_uploads(server: Server, ctx: Context, say) -> dict:
    """The same file sent as multipart, then over tus (each one stored,
    read back from the API, then deleted), and the over-limit probe."""
    plan, token = ctx.plan, ctx.seeded["writer_token"]
    expected_sha256 = upload.zeros_sha256(plan.upload_bytes)
    say(f"upload of {human_bytes(plan.upload_bytes)}")
    before = server.reset_peaks()
    try:
        result = upload.upload(server.port, token, plan.upload_bytes)
    except OSError as exc:
        result = {"error": f"{type(exc).__name__}: {exc}"}
    result["workers"] = server.peaks(before)
    upload.verify(server.port, token, result, expected_sha256)
    if result.get("file_id"):
        result["deleted_status"] = upload.delete_file(server.port, token, result["file_id"])
    say(f"  upload: {_upload_brief(result)}")
    say(f"tus upload of {human_bytes(plan.upload_bytes)}, {human_bytes(plan.tus_chunk_bytes)} chunks")
    before = server.reset_peaks()
    try:
        tus = upload.tus_upload(server.port, token, plan.upload_bytes, plan.tus_chunk_bytes)
    except OSError as exc:
        tus = {"error": f"{type(exc).__name__}: {exc}"}
    tus["workers"] = server.peaks(before)
    upload.verify(server.port, token, tus, expected_sha256)
    if tus.get("file_id"):
        tus["deleted_status"] = upload.delete_file(server.port, token, tus["file_id"])
    if tus.get("upload_path"):
        tus["terminated_status"] = upload.terminate_upload(server.port, token, tus["upload_path"])
    say(f"  tus upload: {_upload_brief(tus)}")
    declared = 2 * plan.upload_limit_bytes
    try:
        probe = upload.over_limit_probe(server.port, token, declared)
    except OSError as exc:
        probe = {"error": f"{type(exc).__name__}: {exc}", "refused_before_body": False}
    say(f"  over-limit probe ({human_bytes(declared)} declared, no body sent): {probe.get('status')}")
    return {"upload": result, "tus_upload": tus, "over_limit": probe}


def _upload_brief(result: dict) -> str:
    if "error" in result:
        return "error: " + result["error"][:120]
    speed = f"{result['mb_per_s']:.1f} MB/s" if result.get("mb_per_s") else "not stored"
    return (
        f"{result['status']}, {speed}, worker RSS growth {result['workers']['max_growth_mb']} MB, "
        f"verified {result.get('verified')}"
    )


def _brief(result: dict) -> str:
    if "error" in result:
        return "error: " + result["error"][:120]
    text = f"{result['req_per_s']:.0f} req/s, {result['mb_per_s']:.1f} MB/s"
    return text + (f", {result['failed']} failed" if result["failed"] else "")
