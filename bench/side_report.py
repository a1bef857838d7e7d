"""bench.side_by_side's table: every run of each figure and their spread,
then each run's details."""

import argparse

FIGURES = [  # key, label ({large}: the large file's size), unit, format
    ("hot_ok_per_s", "hot 100 B link, successful downloads a second", "/s", "{:,.0f}"),
    ("hot_p50_ms", "hot 100 B link, p50 latency", "ms", "{:.2f}"),
    ("hot_p99_ms", "hot 100 B link, p99 latency", "ms", "{:.2f}"),
    ("download_mb_per_s", "{large} download, one curl", "MB/s", "{:,.0f}"),
    ("upload_s", "{large} upload, one curl (POST /api/files/)", "s", "{:.2f}"),
    ("refused_after_ms", "link refused after its expiry, worst of {expiring}", "ms", "{:.1f}"),
    ("copies_small", "copies served of a one-download link, 100 B, {racers} racing", "copies", "{:d}"),
    ("copies_large", "copies served of a one-download link, {large}, {racers} racing", "copies", "{:d}"),
]
IDLE_NOTE = (
    "idle CPU and idle PSS: `.venv/bin/python -m bench.idle` (the same service, fresh and sent nothing, "
    "60 s after 10 s), or --idle-seconds here"
)


def labels(args: argparse.Namespace) -> list[tuple[str, str, str, str]]:
    names = {"large": f"{args.large_mb} MiB", "expiring": args.expiring, "racers": args.racers}
    return [(key, label.format(**names), unit, fmt) for key, label, unit, fmt in FIGURES]


def shown(fmt: str, value) -> str:
    return "-" if value is None else fmt.format(value)


def render(result: dict, args: argparse.Namespace) -> str:
    meta, runs = result["meta"], result["runs"]
    lines = [
        f"Side by side, {meta['date']}: {meta['cpus']} CPUs, Python {meta['python']}, {meta['database']}, "
        f"load average at start {meta['load_average']}",
        f"gunicorn (as `make run` starts it): {meta['gunicorn']}; runexpiry beside it; up in {meta['up_s']:.1f} s",
        f"LINK_RATE_LIMIT={args.link_rate_limit}; {meta['wrk']}, -c{args.connections} -d{args.seconds}s; "
        f"MB = 10^6 bytes; {len(runs)} run(s), each on shares of its own",
        "",
    ]
    rows = [["figure", "unit", *(f"run {n}" for n in range(1, len(runs) + 1)), "min-max"]]
    for key, label, unit, fmt in labels(args):
        values = [run.get(key) for run in runs]
        known = [v for v in values if v is not None]
        spread = f"{shown(fmt, min(known))}-{shown(fmt, max(known))}" if known else "-"
        rows.append([label, unit, *(shown(fmt, v) for v in values), spread])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        lines.append(
            "  ".join(
                cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    if "idle" in meta:
        cpu, pss = meta["idle"]["cpu_percent"], meta["idle"]["pss_mb"]
        lines.append(f"idle over {args.idle_seconds:g} s: CPU {cpu:.4f} % of one core, PSS {pss:.1f} MB")
    else:
        lines.append(IDLE_NOTE)
    lines += ["", "DETAILS"]
    for n, run in enumerate(runs, 1):
        hot, exp = run.get("hot", {}), run.get("expiry", {})
        lines.append(
            f"  run {n}: hot link {hot.get('ok', '-')} x 200, {hot.get('non_2xx', '-')} non-2xx, "
            f"{hot.get('socket_errors', '-')} socket errors; expiry: refusals {exp.get('statuses', '-')}, "
            f"never refused {exp.get('never_refused', '-')}, "
            f"refused before expiry {exp.get('refused_before_expiry', '-')}, "
            f"200s to requests sent after expiry {exp.get('served_after_expiry', '-')}"
        )
        for key in ("small", "large"):
            if f"race_{key}" in run:
                race_ = run[f"race_{key}"]
                lines.append(
                    f"         race {key}: {race_['statuses']}, partial 200s {race_['partial_200s']}, "
                    f"bytes received {race_['bytes_received']:,} (file {race_['file_bytes']:,})"
                )
        for name, error in run.get("errors", {}).items():
            lines.append(f"         ERROR in {name}: {error}")
    return "\n".join(lines)
