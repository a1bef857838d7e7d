"""Turn results into tables, ratios, target checks and JSON.

The JSON holds every figure the tables show (and a few more), so a later run
can be compared with this one field by field.
"""

import json
import math
import os
import platform
import sqlite3
import subprocess
import time
from pathlib import Path

from bench.db import REPO_ROOT
from bench.derived import RATIO_METRICS, check_targets, implied_sweep, ratios
from bench.engines import ENGINES


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    try:
        # Uncommitted changes to the measured code make the commit id a lie.
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "expiry", "sharing", "microcloud", "manage.py"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        dirty = []
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "git_uncommitted_app_files": sum(bool(line.strip()) for line in dirty),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "kernel": platform.release(),
        "load_average": os.getloadavg(),
        "git_commit": commit,
    }


def build(
    meta: dict, sizes: dict, floor: dict, idle_floor: dict | None, startup: dict, results: dict, sweep_interval: float
) -> dict:
    return {
        "meta": meta,
        "sizes": sizes,
        "floor_event_wait_1ms": floor,
        "floor_wait_loop_50ms": idle_floor,
        "startup_s": startup,
        "scenarios": results,
        "ratios_ours_over_theirs": ratios(results),
        "implied_sweep_60s": implied_sweep(results, sweep_interval),
        "targets": check_targets(results, floor),
    }


def rebuild(saved: dict) -> dict:
    """A saved report with its derived parts (ratios, targets) recomputed by
    this version of the code, e.g. to print an old run next to a new one."""
    return build(
        saved["meta"],
        saved["sizes"],
        saved["floor_event_wait_1ms"],
        saved.get("floor_wait_loop_50ms"),
        saved["startup_s"],
        saved["scenarios"],
        saved["sizes"]["sweep_interval"],
    )


def write_json(report: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # allow_nan=False: a NaN or infinity is a bug here, never valid JSON.
    path.write_text(json.dumps(report, indent=2, sort_keys=True, allow_nan=False) + "\n")


# --- text -------------------------------------------------------------------------


def fmt(value, digits: int = 3) -> str:
    """Numbers at a readable precision: 0.412, 12.3, 1,234."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return "inf"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    for row in rows:
        out.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    return "\n".join(text.rstrip() for text in out)


def _lateness_cells(lat: dict) -> list[str]:
    return [fmt(lat.get(k)) for k in ("p50_ms", "p99_ms", "p999_ms", "max_ms")]


def _rows(results: dict, scenario: str, cells) -> list[list[str]]:
    rows = []
    for key, result in results.get(scenario, {}).items():
        label = ENGINES[key].label
        if "error" in result:
            rows.append([label, "error: " + result["error"].splitlines()[0][:80]])
            continue
        rows.append([label, *cells(result)])
    return rows


def _pad(rows: list[list[str]], width: int) -> list[list[str]]:
    return [r + [""] * (width - len(r)) for r in rows]


def render(report: dict) -> str:
    results, sizes = report["scenarios"], report["sizes"]
    meta, floor = report["meta"], report["floor_event_wait_1ms"]
    implied = report["implied_sweep_60s"]
    parts = [
        f"Expiry benchmark, {meta['date']}: {meta['nproc']} CPUs ({meta['cpu']}), Python {meta['python']}, "
        f"SQLite {meta['sqlite']}, load average at start {', '.join(f'{x:.2f}' for x in meta['load_average'])}",
        f"Machine floor: Event.wait(1 ms) overshoot p50 {fmt(floor['p50_ms'])} ms, p99 {fmt(floor['p99_ms'])} ms "
        f"({floor['n']} waits). Engine start-up to ready: "
        + ", ".join(f"{ENGINES[k].label} {v:.2f} s" for k, v in report["startup_s"].items()),
    ]
    sweep_label = f"sweep every {sizes['sweep_interval']:g} s"

    if "spread" in results:
        headers = [
            "engine",
            "shares",
            "expired",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms",
            "CPU s",
            "over s",
            "headroom s",
        ]
        rows = _rows(
            results,
            "spread",
            lambda r: [
                fmt(r["shares"]),
                fmt(r["expired"]),
                *_lateness_cells(r["lateness"]),
                fmt(r["cpu_s"], 2),
                fmt(r["cpu_window_s"], 1),
                fmt(r["headroom_s"], 1),
            ],
        )
        if "spread" in implied:
            i = implied["spread"]
            rows.append(["sweep @60 s (implied)", "", "", fmt(i["p50_ms"]), fmt(i["p99_ms"]), "", fmt(i["max_ms"])])
        parts.append(
            f"SPREAD: {sizes['spread_shares']:,} shares due uniformly over {sizes['spread_seconds']:g} s; "
            "lateness = ended_at - expires_at\n" + table(headers, _pad(rows, len(headers)))
        )

    if "rate" in results:
        headers = ["engine", "shares", "expired", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "CPU %", "stamp gap max ms"]
        rows = _rows(
            results,
            "rate",
            lambda r: [
                fmt(r["shares"]),
                fmt(r["expired"]),
                *_lateness_cells(r["lateness"]),
                fmt(r["cpu_percent"], 1),
                fmt((r.get("stamp_gap") or {}).get("max_ms")),
            ],
        )
        parts.append(
            f"RATE: {sizes['rate_shares']:,} shares due uniformly over {sizes['rate_seconds']:g} s "
            f"(coalescing up to {sizes['daemon_coalesce'] * 1000:g} ms; "
            f"{'ids in deadline order' if sizes.get('rate_ordered') else 'deadlines in random id order'})\n"
            + table(headers, _pad(rows, len(headers)))
        )

    if "burst" in results:
        headers = [
            *("engine", "shares", "expired", "drain s", "seen s", "rows/s", "p50 ms", "max ms", "stamp gap ms"),
            *("CPU s", "history rows"),
        ]
        rows = _rows(
            results,
            "burst",
            lambda r: [
                fmt(r["shares"]),
                fmt(r["expired"]),
                fmt(r["drain_s"]),
                fmt(r["observed_drain_s"]) if r["drained"] else "not drained",
                fmt(r["rows_per_s"]),
                fmt(r["lateness"]["p50_ms"]),
                fmt(r["lateness"]["max_ms"]),
                fmt((r.get("stamp_gap") or {}).get("max_ms")),
                # Both absent from runs saved before they were measured.
                fmt(r.get("cpu_s"), 2),
                fmt(r.get("history_rows")),
            ],
        )
        if "burst" in implied:
            rows.append(["sweep @60 s (implied)", "", "", f"<= {fmt(implied['burst']['worst_drain_s'])}"])
        parts.append(
            f"BURST: {sizes['burst_shares']:,} shares due at one instant; drain = last ended_at - deadline, "
            "seen = when the benchmark saw none left (10 ms polls); CPU from the deadline to seen\n"
            + table(headers, _pad(rows, len(headers)))
        )

    if "idle" in results:
        big, small = sizes["idle_rows"], sizes["idle_small_rows"]
        headers = [
            "engine",
            "CPU %",
            "wake-ups/s",
            f"RSS MB @{big:,}",
            f"RSS MB @{small:,}",
            "RSS delta MB",
            f"CPU % @{small:,}",
        ]
        rows = _rows(
            results,
            "idle",
            lambda r: [
                fmt(r["big"]["cpu_percent"]),
                fmt(r["big"]["wakeups_per_s"], 1),
                fmt(r["big"]["rss_mb"], 1),
                fmt(r["small"]["rss_mb"], 1),
                fmt(r["rss_delta_mb"], 2),
                fmt(r["small"]["cpu_percent"]),
            ],
        )
        if "idle" in implied:
            i = implied["idle"]
            rows.append(["sweep @60 s (implied)", fmt(i["cpu_percent"], 4), fmt(i["wakeups_per_s"], 2)])
        bare = report.get("floor_wait_loop_50ms")
        if bare:
            rows.append(["floor: bare 50 ms wait loop", fmt(bare["cpu_percent"]), fmt(bare["wakeups_per_s"], 1)])
        parts.append(
            f"IDLE: {big:,} rows, none due for days, {sizes['idle_seconds']:g} s measured after start-up "
            f"(and the same with {small:,} rows)\n" + table(headers, _pad(rows, len(headers)))
        )

    if "pickup" in results:
        headers = ["engine", "inserted", "expired", "missed", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "> 10 ms"]
        rows = _rows(
            results,
            "pickup",
            lambda r: [
                fmt(r["shares"]),
                fmt(r["expired"]),
                fmt(r["not_expired"]),
                *_lateness_cells(r["lateness"]),
                fmt(r["late_over_10ms"]),
            ],
        )
        if "pickup" in implied:
            i = implied["pickup"]
            rows.append(["sweep @60 s (implied)", "", "", "", fmt(i["p50_ms"]), fmt(i["p99_ms"]), "", fmt(i["max_ms"])])
        notes = [f"  {ENGINES[k].label}: {r['note']}" for k, r in results["pickup"].items() if r.get("note")]
        parts.append(
            f"PICK-UP: {sizes['pickup_shares']:,} shares inserted by another process over "
            f"{sizes['pickup_seconds']:g} s, each due {sizes['pickup_due_after'] * 1000:g} ms later\n"
            + table(headers, _pad(rows, len(headers)))
            + ("\n" + "\n".join(notes) if notes else "")
        )

    if "refresh" in results:
        r = results["refresh"]
        headers = [
            *("table rows", "window rows", "statements", "query ms (median)", "query ms (min)", "longest one ms"),
            *("load_window() ms", "uses index", "temp sort"),
        ]
        rows = [
            [
                fmt(r["table_rows"]),
                fmt(r["window_rows"]),
                fmt(r["statements"]),
                fmt(r["query_ms_median"]),
                fmt(r["query_ms_min"]),
                fmt(r["longest_statement_ms_median"]),
                fmt(r["load_window_ms_median"]),
                fmt(r["uses_index"]),
                fmt(r["temp_sort"]),
            ]
        ]
        parts.append(
            f"REFRESH: our daemon's window queries (its pages' statements, one after the other), median of {r['runs']} "
            "runs (longest one: a page is one or two; load_window() adds Django's row conversion)\n"
            + table(headers, rows)
            + "\n  SQL:  "
            + r["sql"]
            + "\n  plan: "
            + "\n        ".join(r["plan"])
        )

    ratio_rows = []
    ratio_table = report["ratios_ours_over_theirs"]
    others = list(ratio_table)
    for name, _, _ in RATIO_METRICS:
        cells = [_ratio(ratio_table[o].get(name)) for o in others]
        if any(c != "-" for c in cells):
            ratio_rows.append([name, *cells])
    if ratio_rows:
        headers = ["ours / theirs", *(ENGINES[o].label if o != "sweep" else sweep_label for o in others)]
        parts.append("RATIOS (below 1: ours is lower)\n" + table(headers, ratio_rows))

    if report["targets"]:
        parts.append(targets_part(report["targets"]))
    return "\n\n".join(parts) + "\n"


def targets_part(targets: list[dict]) -> str:
    """The targets as met, MISSED or not measured, with why."""
    rows = [
        [
            t["target"],
            fmt(t["measured"]) + f" {t['unit']}",
            fmt(t["limit"]) + f" {t['unit']}",
            # Rows saved before "status" existed knew only met and missed.
            t.get("status", "met" if t["met"] else "MISSED") + (f" ({t['note']})" if t.get("note") else ""),
        ]
        for t in targets
    ]
    return "OUR DAEMON'S TARGETS (limits with a floor are set from this run's figures)\n" + table(
        ["target", "measured", "limit", ""], rows
    )


def _ratio(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    if value < 1:
        return f"{value:.3g} ({1 / value:,.0f}x lower)" if value < 0.5 else f"{value:.2f}"
    return f"{value:.3g} ({value:,.1f}x higher)" if value > 2 else f"{value:.2f}"
