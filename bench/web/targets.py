"""The web benchmark's targets, each a ratio to a floor of the same run.

Absolute rates and milliseconds change threefold between the machines this
runs on; a ratio to what the same server does with no work of ours (the
floor view, WhiteNoise, nginx, the multipart upload), measured minutes
apart, does not. Nothing here times anything: every figure comes from the
run's cells, so a saved run is judged again by today's targets.
"""

from bench.web.plan import Plan
from bench.web.scenarios import BY_KEY, SCENARIOS, YARDSTICK_CONNECTIONS, ZIP_KEY, human_bytes, zip_label

DATABASES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
STREAM_RSS_LIMIT_MB = 16
UPLOAD_RSS_LIMIT_MB = 32
TUS_SPEED_SHARE = 0.8  # tus upload MB/s over the multipart upload's, at least
ZIP_SPEED_SHARE = 0.8  # the zip of several files' MB/s over the single large file's, at least
ZIP_SINGLE = "download_large"  # what the zip is compared with
FLOOR_RATE = "the floor view's req/s"
# The hot link's yardstick is the floor view served by gunicorn as `make run`
# serves it: if the service's web server changes, the yardstick does not, so
# a faster server counts as a gain instead of moving the line with it.
YARDSTICK_SERVER = "gunicorn as `make run` serves it"
HOT_LINK_FLOOR = f"the floor view's req/s on {YARDSTICK_SERVER}"
# Of the yardstick's req/s, at every concurrency in HOT_LINK_CONNECTIONS. A
# PostgreSQL download pays five round trips that SQLite's does not.
HOT_LINK_SHARES = {"sqlite": 0.7, "postgresql": 0.4}
HOT_LINK_CONNECTIONS = (16, 64)
# The stretch aim, "1.2x the peer": printed as a figure, judged by no one.
HOT_LINK_STRETCH = 0.8
# p99 over p50 at YARDSTICK_CONNECTIONS: a tail bounded by the run's own
# median, where an absolute p50 only measured how fast the machine was.
HOT_LINK_TAIL = 4.0


def _cell(databases: dict, db: str, key: str, connections: int) -> dict | None:
    cell = databases.get(db, {}).get("cells", {}).get(key, {}).get(str(connections))
    return cell if cell and "error" not in cell else None


def ratio(databases: dict, db: str, key: str, connections: int) -> float | None:
    """Our figure over the yardstick's, same database, same concurrency."""
    scenario = BY_KEY[key]
    ours = _cell(databases, db, key, connections)
    floor = _cell(databases, db, scenario.yardstick, connections) if scenario.yardstick else None
    if not ours or not floor or not floor[scenario.metric] or ours[scenario.metric] is None:
        return None
    return ours[scenario.metric] / floor[scenario.metric]


def ratios(databases: dict, plan: Plan) -> dict:
    out: dict[str, dict] = {}
    for db in databases:
        for s in SCENARIOS:
            for c in plan.connections:
                value = ratio(databases, db, s.key, c) if s.yardstick else None
                if value is not None:
                    out.setdefault(db, {}).setdefault(s.key, {})[str(c)] = value
    return out


def _target(name: str, measured, limit, unit: str, met: bool | None, status: str | None = None) -> dict:
    status = status or ("not measured" if met is None else "met" if met else "MISSED")
    return {"target": name, "measured": measured, "limit": limit, "unit": unit, "met": met, "status": status}


def _ratio_target(
    databases: dict, db: str, key: str, what: str, floor_name: str, limit: float, c: int = YARDSTICK_CONNECTIONS
) -> dict:
    name = f"{what} at {c} connections >= {limit * 100:.0f} % of {floor_name} ({DATABASES[db]})"
    value = ratio(databases, db, key, c)
    cell = _cell(databases, db, key, c)
    if value is None or cell is None:
        return _target(name, None, limit * 100, "%", None)
    # Errors (e.g. 503s) make a fast figure meaningless.
    met = value >= limit and cell["failed"] == 0
    return _target(name, value * 100, limit * 100, "%", met)


def _tail_target(databases: dict, db: str, key: str, what: str) -> dict:
    c = YARDSTICK_CONNECTIONS
    name = f"{what} at {c} connections: p99 <= {HOT_LINK_TAIL:g} x p50 ({DATABASES[db]})"
    cell = _cell(databases, db, key, c)
    if cell is None or not cell.get("p50_ms") or cell.get("p99_ms") is None:
        return _target(name, None, HOT_LINK_TAIL, "x p50", None)
    tail = cell["p99_ms"] / cell["p50_ms"]
    return _target(name, tail, HOT_LINK_TAIL, "x p50", tail <= HOT_LINK_TAIL and cell["failed"] == 0)


def _yardstick(plan: Plan) -> dict:
    """Which floor the hot link is read against, and the server that served it."""
    return {
        "scenario": "floor_view",
        "server": YARDSTICK_SERVER,
        "worker_class": "gthread",
        "preload": True,
        "workers": plan.workers,
        "threads": plan.threads,
    }


def hot_link_stretch(databases: dict, plan: Plan) -> list[dict]:
    """Whether the hot link reached the stretch aim: a figure beside the
    targets, with no met or MISSED."""
    rows = []
    for db in [db for db in DATABASES if db in databases]:
        for c in [c for c in HOT_LINK_CONNECTIONS if c in plan.connections]:
            value = ratio(databases, db, "download_small", c)
            cell = _cell(databases, db, "download_small", c)
            reached = None if value is None or cell is None else value >= HOT_LINK_STRETCH and cell["failed"] == 0
            rows.append(
                {
                    "figure": f"hot link at {c} connections, % of {HOT_LINK_FLOOR} ({DATABASES[db]})",
                    "measured": None if value is None else value * 100,
                    "aim": HOT_LINK_STRETCH * 100,
                    "unit": "%",
                    "status": "not measured" if reached is None else "reached" if reached else "not reached",
                    "yardstick": _yardstick(plan),
                }
            )
    return rows


def zip_share(databases: dict, db: str, connections: int) -> float | None:
    """The zip's MB/s over the single large file's, same database, same concurrency."""
    zipped, single = _cell(databases, db, ZIP_KEY, connections), _cell(databases, db, ZIP_SINGLE, connections)
    if not zipped or not single or not single["mb_per_s"] or zipped["mb_per_s"] is None:
        return None
    return zipped["mb_per_s"] / single["mb_per_s"]


def _zip_target(databases: dict, db: str, plan: Plan) -> dict:
    c = YARDSTICK_CONNECTIONS
    name = (
        f"zip of {zip_label(plan)} (all.zip) at {c} connections >= {ZIP_SPEED_SHARE * 100:.0f} % of the "
        f"{human_bytes(plan.large_bytes)} download's MB/s ({DATABASES[db]})"
    )
    share = zip_share(databases, db, c)
    if share is None:
        return _target(name, None, ZIP_SPEED_SHARE * 100, "%", None)
    # A fast figure is meaningless with errors, or for bytes that are not the zip promised.
    check = databases[db].get("zip_check") or {}
    met = share >= ZIP_SPEED_SHARE and _cell(databases, db, ZIP_KEY, c)["failed"] == 0 and bool(check.get("ok"))
    return _target(name, share * 100, ZIP_SPEED_SHARE * 100, "%", met)


def _below(what: str, db: str, value: float | None, limit: float) -> dict:
    met = None if value is None else value < limit
    return _target(f"{what} < {limit} MB ({DATABASES[db]})", value, limit, "MB", met)


def check_targets(databases: dict, plan: Plan) -> list[dict]:
    small, large = human_bytes(plan.small_bytes), human_bytes(plan.large_bytes)
    dbs = [db for db in DATABASES if db in databases]
    rows = []
    for db in dbs:
        what = f"{small} download, one hot link"
        for c in [c for c in HOT_LINK_CONNECTIONS if c in plan.connections]:
            target = _ratio_target(databases, db, "download_small", what, HOT_LINK_FLOOR, HOT_LINK_SHARES[db], c)
            rows.append({**target, "yardstick": _yardstick(plan)})
        rows.append(_tail_target(databases, db, "download_small", what))
    for db in dbs:
        # Shown, not a target: a limited link must count exactly, one row lock each.
        value = ratio(databases, db, "download_limited", YARDSTICK_CONNECTIONS)
        name = f"{small} download of a link with a download limit, % of {FLOOR_RATE} ({DATABASES[db]})"
        rows.append(_target(name, None if value is None else value * 100, None, "%", None, "shown (no target)"))
    for db in dbs:
        rows.append(_ratio_target(databases, db, "api_create", "POST /api/shares/", FLOOR_RATE, 0.3))
    for db in dbs:
        rows.append(_ratio_target(databases, db, "download_large", f"{large} download", "WhiteNoise's MB/s", 0.5))
    for db in dbs:
        rows.append(_zip_target(databases, db, plan))
    for db in dbs:
        cells = [_cell(databases, db, "download_large", c) for c in plan.connections]
        growth = [c["workers"]["max_growth_mb"] for c in cells if c and c["workers"]["max_growth_mb"] is not None]
        what = f"worker RSS growth while streaming {large}, any concurrency"
        rows.append(_below(what, db, max(growth) if growth else None, STREAM_RSS_LIMIT_MB))
    for db in dbs:
        up = databases[db].get("upload") or {}
        growth = (up.get("workers") or {}).get("max_growth_mb") if up.get("status") == 201 else None
        what = f"{human_bytes(plan.upload_bytes)} upload accepted, worker RSS growth"
        rows.append(_below(what, db, growth, UPLOAD_RSS_LIMIT_MB))
    for db in dbs:
        rows.append(_tus_speed_target(databases[db], db, plan))
    for db in dbs:
        tus = databases[db].get("tus_upload") or {}
        growth = (tus.get("workers") or {}).get("max_growth_mb") if tus.get("verified") else None
        what = f"{human_bytes(plan.upload_bytes)} tus upload stored, worker RSS growth"
        rows.append(_below(what, db, growth, UPLOAD_RSS_LIMIT_MB))
    for db in dbs:
        probe = databases[db].get("over_limit")
        met = None if probe is None else bool(probe.get("refused_before_body"))
        name = f"upload over the limit: 413 before its body is read ({DATABASES[db]})"
        rows.append(_target(name, probe.get("status") if probe else None, 413, "", met))
    for db in dbs:
        what = f"{large} download offloaded (X-Accel-Redirect behind nginx)"
        rows.append(_ratio_target(databases, db, "offload_large", what, "nginx's own MB/s", 0.9))
    return rows


def _tus_speed_target(result: dict, db: str, plan: Plan) -> dict:
    """The tus upload's MB/s against the multipart upload's of the same
    size, same server: both stored, or not measured."""
    name = (
        f"{human_bytes(plan.upload_bytes)} tus upload ({human_bytes(plan.tus_chunk_bytes)} chunks) "
        f">= {TUS_SPEED_SHARE * 100:.0f} % of the multipart upload's MB/s ({DATABASES[db]})"
    )
    multipart, tus = result.get("upload") or {}, result.get("tus_upload") or {}
    stored = multipart.get("status") == 201 and multipart.get("verified", True) and tus.get("verified")
    if not stored or not multipart.get("mb_per_s") or not tus.get("mb_per_s"):
        return _target(name, None, TUS_SPEED_SHARE * 100, "%", None)
    share = tus["mb_per_s"] / multipart["mb_per_s"]
    return _target(name, share * 100, TUS_SPEED_SHARE * 100, "%", share >= TUS_SPEED_SHARE)
