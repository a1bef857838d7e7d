"""Tables and JSON for the web benchmark.

The JSON holds every figure of every cell; ratios and targets (targets.py)
are derived from them again by --render, so an old run can be read with
today's targets.
"""

from bench.report import fmt, table
from bench.web.plan import Plan
from bench.web.scenarios import BY_KEY, SCENARIOS, ZIP_KEY, human_bytes, label, zip_label
from bench.web.targets import (
    DATABASES,
    HOT_LINK_STRETCH,
    YARDSTICK_SERVER,
    check_targets,
    hot_link_stretch,
    ratios,
    zip_share,
)


def build(meta: dict, plan: dict, databases: dict) -> dict:
    p = Plan(**{**plan, "connections": tuple(plan["connections"])})
    return {
        "meta": meta,
        "plan": plan,
        "databases": databases,
        "ratios_to_floor": ratios(databases, p),
        "yardstick_server": f"{YARDSTICK_SERVER} (gthread, --preload): {p.workers} workers x {p.threads} threads",
        "targets": check_targets(databases, p),
        "stretch": hot_link_stretch(databases, p),
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
        f"{title}: the web server ready in {fmt(result.get('startup_s'), 2)} s; MB = 10^6 bytes read (headers "
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
        f"machine; its own database, seeded the same way): ready in {fmt(result.get('startup_s'), 2)} s; "
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


def served_by(meta: dict) -> str:
    """The web server and its version (a run saved before --server was gunicorn)."""
    name = meta.get("server", "gunicorn")
    return f"{name} {meta.get('server_version') or meta.get(name, '?')}"


def render(report: dict) -> str:
    meta, plan_dict, databases = report["meta"], report["plan"], report["databases"]
    plan = Plan(**{**plan_dict, "connections": tuple(plan_dict["connections"])})
    parts = [
        f"Web benchmark, {meta['date']}: {meta['nproc']} CPUs ({meta['cpu']}), Python {meta['python']}, "
        f"load average at start {', '.join(f'{x:.2f}' for x in meta['load_average'])}; commit {meta['git_commit']}\n"
        f"{served_by(meta)}: {plan.workers} workers x {plan.threads} threads; "
        f"{meta.get('wrk', 'wrk')}, {plan.seconds} s per cell, connections {', '.join(map(str, plan.connections))}; "
        "loopback, client and server on the same cores\n"
        f"preset {meta.get('preset', '?')}"
        + "".join(f", {k}={v}" for k, v in (meta.get("changed_from_preset") or {}).items())
        + f"; command: {meta.get('command', '?')}"
    ]
    if meta.get("server", "gunicorn") != "gunicorn":
        parts.append(
            f"The floor view here is {meta['server']}'s; the hot link's targets are set against gunicorn's "
            "(--server gunicorn), a slower floor: judged here, they are stricter than written."
        )
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
    stretch_rows = [
        [
            s["figure"],
            "-" if s["measured"] is None else f"{fmt(s['measured'], 1)} {s['unit']}",
            f"{fmt(s['aim'], 0)} {s['unit']}",
            s["status"],
        ]
        for s in report.get("stretch", [])
    ]
    if stretch_rows:
        title = f"STRETCH AIM (a figure, not a target): the hot link at {HOT_LINK_STRETCH * 100:.0f} % of the floor"
        parts.append(title + "\n" + table(["figure", "measured", "aim", ""], stretch_rows))
    return "\n\n".join(parts) + "\n"
