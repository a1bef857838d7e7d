"""Ratios to the floor, target checks, tables and JSON for the web benchmark.

The JSON holds every figure of every cell; ratios and targets are derived
from them again by --render, so an old run can be read with today's targets.
"""

from bench.report import fmt, table
from bench.web.plan import Plan
from bench.web.scenarios import BY_KEY, SCENARIOS, YARDSTICK_CONNECTIONS, ZIP_KEY, human_bytes, label, zip_label

DATABASES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
STREAM_RSS_LIMIT_MB = 16
UPLOAD_RSS_LIMIT_MB = 32
TUS_SPEED_SHARE = 0.8  # tus upload MB/s over the multipart upload's, at least
ZIP_SPEED_SHARE = 0.8  # the zip of several files' MB/s over the single large file's, at least
ZIP_SINGLE = "download_large"  # what the zip is compared with
FLOOR_RATE = "the floor view's req/s"
HOT_LINK_SHARE = 0.6  # of the floor's req/s, at every concurrency in HOT_LINK_CONNECTIONS
HOT_LINK_CONNECTIONS = (16, 64)
HOT_LINK_P50_MS = 5.0  # at YARDSTICK_CONNECTIONS


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


def _latency_target(databases: dict, db: str, key: str, what: str) -> dict:
    c = YARDSTICK_CONNECTIONS
    name = f"{what} at {c} connections: p50 latency < {HOT_LINK_P50_MS:g} ms ({DATABASES[db]})"
    cell = _cell(databases, db, key, c)
    if cell is None or cell.get("p50_ms") is None:
        return _target(name, None, HOT_LINK_P50_MS, "ms", None)
    met = cell["p50_ms"] < HOT_LINK_P50_MS and cell["failed"] == 0
    return _target(name, cell["p50_ms"], HOT_LINK_P50_MS, "ms", met)


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
        for c in [c for c in HOT_LINK_CONNECTIONS if c in plan.connections]:
            what = f"{small} download, one hot link"
            rows.append(_ratio_target(databases, db, "download_small", what, FLOOR_RATE, HOT_LINK_SHARE, c))
        rows.append(_latency_target(databases, db, "download_small", f"{small} download, one hot link"))
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


def build(meta: dict, plan: dict, databases: dict) -> dict:
    p = Plan(**{**plan, "connections": tuple(plan["connections"])})
    return {
        "meta": meta,
        "plan": plan,
        "databases": databases,
        "ratios_to_floor": ratios(databases, p),
        "targets": check_targets(databases, p),
    }


def rebuild(saved: dict) -> dict:
    """A saved run with its ratios and targets derived again by this code."""
    return build(saved["meta"], saved["plan"], saved["databases"])


# --- text -------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f} %"


def _cell_row(name: str, cell: dict) -> list[str]:
    if "error" in cell:
        return [name, fmt(cell.get("connections")), "error: " + cell["error"].splitlines()[0][:70]]
    workers = cell["workers"]
    return [
        name,
        fmt(cell["connections"]),
        fmt(cell["req_per_s"]),
        fmt(cell["p50_ms"], 2),
        fmt(cell["p99_ms"], 2),
        fmt(cell["mb_per_s"], 2),
        fmt(cell["failed"]),
        "/".join(f"{mb:.0f}" for mb in workers["peak_rss_mb"]),
        fmt(workers["max_growth_mb"], 1),
    ]


CELL_HEADERS = ["scenario", "conns", "req/s", "p50 ms", "p99 ms", "MB/s", "failed", "peak RSS MB/worker", "growth MB"]
ON_BUCKET = "from the bucket (moto, same machine)"  # every bucket row says where its bytes were


def _cells_table(result: dict, plan: Plan, suffix: str = "") -> str:
    rows = []
    for s in SCENARIOS:
        for c in plan.connections:
            cell = result["cells"].get(s.key, {}).get(str(c))
            if cell is not None:
                name = label(s, plan) + (f" {suffix}" if suffix else "")
                rows.append(_cell_row(name, {"connections": c, **cell}))
    rows = [r + [""] * (len(CELL_HEADERS) - len(r)) for r in rows]
    return table(CELL_HEADERS, rows)


def _database_part(db: str, result: dict, plan: Plan) -> str:
    version = result.get("version") or (result.get("bucket") or {}).get("version", "")
    title = f"{DATABASES[db].upper()} {version}".strip()
    lines = []
    if "error" in result:
        lines.append(f"{title}: not measured: {result['error']}")
    elif "cells" in result:
        lines += _disk_part(title, result, plan)
    else:
        lines.append(f"{title}: the disk not measured (--storage)")
    if "bucket" in result:
        lines.append(_bucket_part(result["bucket"], plan))
    return "\n".join(lines)


def _disk_part(title: str, result: dict, plan: Plan) -> list[str]:
    lines = [
        f"{title}: gunicorn ready in {fmt(result.get('startup_s'), 2)} s; MB = 10^6 bytes read (headers "
        "included); growth = the largest rise of a worker's peak RSS over the cell",
        _cells_table(result, plan),
    ]
    for key, note in result.get("not_built", {}).items():
        lines.append(f"  not built yet: {label(BY_KEY[key], plan)} ({note})")
    if "zip_check" in result:
        lines.append(f"  zip check (one whole all.zip, untimed): {_zip_check_text(result['zip_check'])}")
    probe = result.get("over_limit")
    if result.get("upload") or result.get("tus_upload"):
        lines.append(_uploads_table(result, plan))
    if probe:
        answer = probe.get("error") or f"{probe['status']} after {fmt(probe['answered_s'], 3)} s"
        lines.append(
            f"  over the limit: {human_bytes(probe.get('declared_bytes', 0))} declared, no body sent: {answer}"
        )
    return lines


def _bucket_part(result: dict, plan: Plan) -> str:
    """The bucket pass: the same rows, their bytes in moto's memory."""
    if "error" in result:
        return f"  in a bucket: not measured: {result['error']}"
    lines = [
        f"  in a bucket (STORAGE_URL on moto {result.get('moto', '?')}, an in-memory Python S3 server on this "
        f"machine; its own database, seeded the same way): gunicorn ready in {fmt(result.get('startup_s'), 2)} s; "
        "figures only, no target",
        "\n".join("  " + line for line in _cells_table(result, plan, ON_BUCKET).splitlines()),
    ]
    if result.get("upload") or result.get("tus_upload"):
        lines.append(_uploads_table(result, plan, "into the bucket (moto, same machine)"))
    return "\n".join(lines)


def _zip_check_text(check: dict) -> str:
    if "error" in check:
        return "error: " + check["error"][:120]
    if not check.get("ok"):
        return "FAILED: " + "; ".join(check.get("problems", []))[:300]
    return (
        f"{check['bytes']} bytes read = Content-Length, a valid zip ({len(check['entries'])} stored entries, "
        "testzip() None)"
    )


def _uploads_table(result: dict, plan: Plan, suffix: str = "") -> str:
    """The multipart and tus uploads of the same file, one row each."""
    headers = ["upload", "status", "requests", "seconds", "last answer s", "MB/s", "growth MB", "stored as sent"]
    rows = []
    for key, name in (
        ("upload", "POST /api/files/ (multipart)"),
        ("tus_upload", f"tus /api/uploads/, {human_bytes(plan.tus_chunk_bytes)} chunks"),
    ):
        name += f" {suffix}" if suffix else ""
        up = result.get(key)
        if up is None:
            continue
        if "error" in up:
            rows.append([name, "error: " + up["error"].splitlines()[0][:70]])
            continue
        verified = up.get("verified")
        rows.append(
            [
                name,
                fmt(up["status"]),
                fmt(up.get("requests", 1)),
                fmt(up["total_s"], 2),
                # multipart: after its last byte; tus: the last PATCH's, which stores the file
                fmt(up["finish_s"] if "finish_s" in up else up["total_s"] - up["send_s"], 2),
                fmt(up["mb_per_s"], 1),
                fmt(up["workers"]["max_growth_mb"], 1),
                "-" if verified is None else "yes" if verified else "NO",
            ]
        )
    rows = [r + [""] * (len(headers) - len(r)) for r in rows]
    title = (
        f"  uploads of {human_bytes(plan.upload_bytes)} (timed from the first byte to the answer that stores "
        "the file; growth = the largest rise of a worker's peak RSS; stored as sent: size and SHA-256 from the API)"
    )
    return title + "\n" + "\n".join("  " + line for line in table(headers, rows).splitlines())


def storage_figures(result: dict, plan: Plan) -> dict[str, float | None]:
    """The MB/s compared between the disk and the bucket, by row name: None
    when not measured, failed, or not stored as sent."""
    large, sent = human_bytes(plan.large_bytes), human_bytes(plan.upload_bytes)
    out: dict[str, float | None] = {}
    for c in plan.connections:
        cell = (result.get("cells") or {}).get("download_large", {}).get(str(c))
        ok = cell is not None and "error" not in cell and cell["failed"] == 0
        out[f"{large} download @{c}"] = cell["mb_per_s"] if ok else None
    for key, name in (("upload", "multipart"), ("tus_upload", f"tus, {human_bytes(plan.tus_chunk_bytes)} chunks")):
        up = result.get(key) or {}
        out[f"{sent} upload, {name}"] = up.get("mb_per_s") if up.get("verified") else None
    return out


def _storage_table(databases: dict, dbs: list[str], plan: Plan) -> str:
    headers = ["MB/s"]
    for db in dbs:
        headers += [f"{DATABASES[db]} disk", f"{DATABASES[db]} bucket", "bucket / disk"]
    names = list(storage_figures({}, plan))
    columns = []
    for db in dbs:
        disk, in_bucket = storage_figures(databases[db], plan), storage_figures(databases[db]["bucket"], plan)
        columns.append((disk, in_bucket))
    rows = []
    for name in names:
        row = [name]
        for disk, in_bucket in columns:
            share = in_bucket[name] / disk[name] if disk[name] and in_bucket[name] is not None else None
            row += [fmt(disk[name], 1), fmt(in_bucket[name], 1), _pct(share)]
        rows.append(row)
    return (
        "DISK AND BUCKET (the same rows; the bucket is moto, an in-memory Python S3 server on this machine: "
        "a floor of our overhead plus moto's, not a real bucket's throughput)\n" + table(headers, rows)
    )


def render(report: dict) -> str:
    meta, plan_dict, databases = report["meta"], report["plan"], report["databases"]
    plan = Plan(**{**plan_dict, "connections": tuple(plan_dict["connections"])})
    parts = [
        f"Web benchmark, {meta['date']}: {meta['nproc']} CPUs ({meta['cpu']}), Python {meta['python']}, "
        f"load average at start {', '.join(f'{x:.2f}' for x in meta['load_average'])}; commit {meta['git_commit']}\n"
        f"gunicorn {meta.get('gunicorn', '?')}: {plan.workers} workers x {plan.threads} threads (gthread); "
        f"{meta.get('wrk', 'wrk')}, {plan.seconds} s per cell, connections {', '.join(map(str, plan.connections))}; "
        "loopback, client and server on the same cores\n"
        f"preset {meta.get('preset', '?')}"
        + "".join(f", {k}={v}" for k, v in (meta.get("changed_from_preset") or {}).items())
        + f"; command: {meta.get('command', '?')}"
    ]
    for db in DATABASES:
        if db in databases:
            parts.append(_database_part(db, databases[db], plan))

    table_ratios = report["ratios_to_floor"]
    dbs = [db for db in DATABASES if db in table_ratios]
    if dbs:
        headers = ["ours / floor", "floor", "figure"]
        headers += [f"{DATABASES[db]} @{c}" for db in dbs for c in plan.connections]
        rows = []
        for s in SCENARIOS:
            if not s.yardstick:
                continue
            values = [table_ratios[db].get(s.key, {}).get(str(c)) for db in dbs for c in plan.connections]
            if s.path is None:
                rows.append([label(s, plan), s.yardstick, s.metric, "not built yet"])
            elif any(v is not None for v in values):
                rows.append([label(s, plan), s.yardstick, s.metric, *(_pct(v) for v in values)])
        rows = [r + [""] * (len(headers) - len(r)) for r in rows]
        parts.append("RATIOS TO THE FLOOR (same database, same concurrency)\n" + table(headers, rows))

    zip_dbs = [db for db in DATABASES if db in databases and ZIP_KEY in databases[db].get("cells", {})]
    if zip_dbs:
        headers = [
            "zip / single file",
            "figure",
            *(f"{DATABASES[db]} @{c}" for db in zip_dbs for c in plan.connections),
        ]
        values = [zip_share(databases, db, c) for db in zip_dbs for c in plan.connections]
        row = [f"{zip_label(plan)} as all.zip / {human_bytes(plan.large_bytes)} file", "mb_per_s"]
        parts.append(
            "ZIP TO SINGLE FILE (same database, same concurrency)\n" + table(headers, [row + list(map(_pct, values))])
        )

    bucket_dbs = [db for db in DATABASES if "cells" in (databases.get(db, {}).get("bucket") or {})]
    if bucket_dbs:
        parts.append(_storage_table(databases, bucket_dbs, plan))

    target_rows = [
        [
            t["target"],
            "-" if t["measured"] is None else f"{fmt(t['measured'], 1)} {t['unit']}".strip(),
            "-" if t["limit"] is None else f"{fmt(t['limit'], 0)} {t['unit']}".strip(),
            t["status"],
        ]
        for t in report["targets"]
    ]
    parts.append("TARGETS\n" + table(["target", "measured", "limit", ""], target_rows))
    return "\n\n".join(parts) + "\n"
