"""The five scenarios, each run against every engine on a fresh database.

Shares for spread and burst are inserted before the engine starts, due a
"lead" after it: long enough for the engine to start and load its first
window (the seed loop sees nothing written after a refresh), measured per
engine by a warm-up run. Each result records the headroom it really had.
"""

import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench import procstats
from bench.db import (
    REPO_ROOT,
    Databases,
    Watcher,
    connect,
    django_env,
    expired_events,
    far_deadlines,
    fill,
    read_outcomes,
)
from bench.engines import DAEMON, Engine, EngineFailed, RunningEngine, expired_log
from bench.seed_loop import DEFAULT_LIFETIME_S, reference_interval
from bench.sizes import Sizes
from bench.stats import lateness_ms

SCENARIOS = ("spread", "rate", "burst", "idle", "pickup", "refresh")
# Scenarios about our daemon alone (the others would only be slower copies).
DAEMON_ONLY = {"rate"}
# Rows of the warm-up's second start: what filling a table and loading it
# cost a row on this machine (bench.derived flags a result without headroom).
CALIBRATION_ROWS = 10_000
MIN_PER_ROW_S = 20e-6


@dataclass
class Run:
    dbs: Databases
    sizes: Sizes
    engines: list[Engine]
    say: Callable[[str], None]
    startup_s: dict[str, float] = field(default_factory=dict)
    per_row_s: dict[str, float] = field(default_factory=dict)
    _quiet_tables: dict[tuple[int, int], tuple[Path, float]] = field(default_factory=dict)

    def start(self, engine: Engine, db: Path) -> RunningEngine:
        """Start `engine` on `db`, its output logged next to the database."""
        log = self.dbs.workdir / f"{db.stem}.{engine.key}.log"
        return RunningEngine(
            engine,
            db,
            log,
            daemon_refresh_interval=self.sizes.daemon_refresh_interval,
            sweep_interval=self.sizes.sweep_interval,
            daemon_coalesce=self.sizes.daemon_coalesce,
        )

    def warm_up(self) -> None:
        """Start each engine once on an empty database, then once on a table
        of CALIBRATION_ROWS shares due within its window: how long these take
        sets the lead of the timed scenarios (and warms the OS caches for
        Python's imports, so the first timed run is not the slowest)."""
        for engine in self.engines:
            db = self.dbs.fresh(f"warmup-{engine.key}")
            with self.start(engine, db) as proc:
                self.startup_s[engine.key] = proc.wait_ready()
            self.per_row_s[engine.key] = self._per_row(engine)
            self.say(
                f"warm-up: {engine.label} ready in {self.startup_s[engine.key]:.2f} s, "
                f"{self.per_row_s[engine.key] * 1e6:.0f} us a row to fill and load"
            )

    def _per_row(self, engine: Engine) -> float:
        """Seconds a row adds from filling the table to the engine being
        ready: the fill, and the engine's loading of its first window (on a
        slow machine 100,000 rows took longer than a fixed allowance, and
        the rate scenario then measured the engine's catch-up)."""
        db = self.dbs.fresh(f"calibrate-{engine.key}")
        now = time.time()
        started = time.monotonic()
        # Due in 30-40 s: inside the daemon's first window, after the warm-up ends.
        fill(db, self.dbs.owner_id, [now + 30 + i * 1e-3 for i in range(CALIBRATION_ROWS)], created_at=now)
        filled = time.monotonic() - started
        with self.start(engine, db) as proc:
            loaded = max(0.0, proc.wait_ready() - self.startup_s[engine.key])
        self.dbs.remove(db)
        return max(MIN_PER_ROW_S, (filled + loaded) / CALIBRATION_ROWS)

    def lead(self, engine: Engine, rows: int) -> float:
        """Seconds from filling the table to its first deadline."""
        per_row = self.per_row_s.get(engine.key, MIN_PER_ROW_S)
        return 1.5 * (self.startup_s.get(engine.key, 3.0) + rows * per_row) + 1.0

    def quiet_table(self, rows: int, window: int) -> tuple[Path, float]:
        """A big table with nothing due for days (built once, then copied):
        `window` of its shares fall before the returned bound."""
        key = (rows, window)
        if key not in self._quiet_tables:
            started = time.monotonic()
            path = self.dbs.fresh(f"quiet-{rows}")
            now = time.time()
            deadlines, bound = far_deadlines(rows, now=now, window=window)
            fill(path, self.dbs.owner_id, deadlines, created_at=now)
            self._quiet_tables[key] = (path, bound)
            self.say(f"built a {rows:,}-row quiet table in {time.monotonic() - started:.1f} s")
        return self._quiet_tables[key]


# --- helpers ------------------------------------------------------------------


def sleep_until(moment: float, proc: RunningEngine) -> None:
    """Sleep until the wall-clock `moment`, checking the engine is alive."""
    while (left := moment - time.time()) > 0:
        proc.check_alive()
        time.sleep(min(left, 0.1))


def wait_drained(proc: RunningEngine, watcher: Watcher, last_deadline: float, give_up_at: float) -> float | None:
    """Wall-clock time at which no share due by `last_deadline` was active any
    more, or None if that had not happened by `give_up_at`. Polls every 10 ms
    for the first 2 s (burst drain times are read from this), then 100 ms."""
    sleep_until(last_deadline, proc)
    while True:
        now = time.time()
        if not watcher.any_active_due(last_deadline):
            return now
        if now > give_up_at:
            return None
        proc.check_alive()
        time.sleep(0.01 if now - last_deadline < 2.0 else 0.1)


def expiry_summary(db: Path) -> dict:
    outcomes = read_outcomes(db)
    late = [o.lateness for o in outcomes if o.lateness is not None]
    return {
        "shares": len(outcomes),
        "expired": len(late),
        "not_expired": sum(o.status == "active" for o in outcomes),
        "negative_lateness": sum(x < 0 for x in late),
        "lateness": lateness_ms(late),
        "_late": late,
        "_outcomes": outcomes,
    }


def public(result: dict) -> dict:
    """Drop the raw samples (kept under "_" keys for the computations)."""
    return {k: v for k, v in result.items() if not k.startswith("_")}


# --- scenarios ------------------------------------------------------------------


def stamp_gaps(db: Path) -> dict | None:
    """From our daemon's expiry log: how much earlier than the commit that
    made it true each ended_at was stamped (logged_at is taken right after
    the commit), in ms."""
    path = expired_log(db)
    if not path.exists():
        return None
    gaps = []
    for line in path.read_text().splitlines():
        _id, ended, logged = line.split()
        gaps.append(float(logged) - float(ended))
    if not gaps:
        return None
    gaps.sort()
    return {"n": len(gaps), "p99_ms": gaps[int(0.99 * (len(gaps) - 1))] * 1000, "max_ms": gaps[-1] * 1000}


def spread(
    run: Run,
    engine: Engine,
    *,
    n: int | None = None,
    span: float | None = None,
    name="spread",
    ordered: bool = False,
) -> dict:
    n = n or run.sizes.spread_shares
    span = span or run.sizes.spread_seconds
    db = run.dbs.fresh(f"{name}-{engine.key}")
    now = time.time()
    first = now + run.lead(engine, n)
    rng = random.Random(2)  # same deadlines pattern for every engine
    deadlines = [rng.uniform(first, first + span) for _ in range(n)]
    fill(db, run.dbs.owner_id, sorted(deadlines) if ordered else deadlines, created_at=now)
    with run.start(engine, db) as proc, Watcher(db) as watcher:
        proc.wait_ready()
        ready_at = time.time()
        # The CPU is counted from the first deadline: the idle lead before it
        # would dilute the rate's "% of a core" by however long the lead is.
        sleep_until(first, proc)
        counted_from = time.time()
        before = procstats.sample(proc.pid)
        done_at = wait_drained(proc, watcher, first + span, give_up_at=first + span + 30 + n * 0.002)
        after = procstats.sample(proc.pid)
    result = expiry_summary(db)
    result.update(
        headroom_s=first - ready_at,
        drained=done_at is not None,
        cpu_s=after.cpu_ticks_s - before.cpu_ticks_s,
        cpu_run_s=after.cpu_run_s - before.cpu_run_s,
        cpu_window_s=(done_at or time.time()) - counted_from,
        cpu_counted_after_first_s=counted_from - first,
        exit_code=proc.exit_code,
    )
    result["cpu_percent"] = 100 * result["cpu_s"] / result["cpu_window_s"] if result["cpu_window_s"] else None
    result["stamp_gap"] = stamp_gaps(db)
    return result


def rate(run: Run, engine: Engine) -> dict:
    """Our daemon at 10,000 expiries a second: spread, at ten times the rate."""
    sizes = run.sizes
    return spread(
        run, engine, n=sizes.rate_shares, span=sizes.rate_seconds, name="rate", ordered=bool(sizes.rate_ordered)
    )


def burst(run: Run, engine: Engine) -> dict:
    n = run.sizes.burst_shares
    db = run.dbs.fresh(f"burst-{engine.key}")
    now = time.time()
    deadline = now + run.lead(engine, n)
    fill(db, run.dbs.owner_id, [deadline] * n, created_at=now)
    with run.start(engine, db) as proc, Watcher(db) as watcher:
        proc.wait_ready()
        ready_at = time.time()
        # CPU from the deadline: the sweep's is then its one UPDATE of these
        # rows, the yardstick of our daemon's CPU at 10,000 a second.
        sleep_until(deadline, proc)
        before = procstats.sample(proc.pid)
        # The seed loop needs ~1.1 ms a share; give every engine 3 ms a share.
        done_at = wait_drained(proc, watcher, deadline, give_up_at=deadline + 30 + n * 0.003)
        after = procstats.sample(proc.pid)
    result = expiry_summary(db)
    ends = [o.ended_at for o in result["_outcomes"] if o.ended_at is not None]
    drain = max(ends) - deadline if ends else None
    result.update(
        headroom_s=deadline - ready_at,
        drained=done_at is not None,
        drain_s=drain,
        observed_drain_s=(done_at - deadline) if done_at else None,
        rows_per_s=(result["expired"] / drain) if drain else None,
        cpu_s=after.cpu_ticks_s - before.cpu_ticks_s,
        history_rows=expired_events(db),
        stamp_gap=stamp_gaps(db),
        exit_code=proc.exit_code,
    )
    return result


def idle(run: Run, engine: Engine) -> dict:
    """CPU, wake-ups and RSS of an engine with nothing to do, next to a big
    table and next to a small one: what lies outside the window must not cost."""
    result = {}
    same_as_refresh = run.sizes.idle_rows == run.sizes.refresh_rows
    for label, rows, window in (
        ("big", run.sizes.idle_rows, run.sizes.refresh_window if same_as_refresh else 0),
        ("small", run.sizes.idle_small_rows, 0),
    ):
        template, _ = run.quiet_table(rows, window)
        db = run.dbs.fresh(f"idle{rows}-{engine.key}", source=template)
        try:
            with run.start(engine, db) as proc:
                proc.wait_ready()
                time.sleep(0.5)  # let start-up leftovers (GC, page faults) pass
                before, started = procstats.sample(proc.pid), time.monotonic()
                time.sleep(run.sizes.idle_seconds)
                proc.check_alive()
                after, elapsed = procstats.sample(proc.pid), time.monotonic() - started
            result[label] = {"rows": rows, **procstats.idle_figures(before, after, elapsed)}
        finally:
            run.dbs.remove(db)  # a million-row copy is ~350 MB
    result["rss_delta_mb"] = result["big"]["rss_mb"] - result["small"]["rss_mb"]
    return result


def pickup(run: Run, engine: Engine) -> dict:
    """Shares created by another process after the engine's last refresh."""
    sizes = run.sizes
    db = run.dbs.fresh(f"pickup-{engine.key}")
    with run.start(engine, db) as proc, Watcher(db) as watcher:
        proc.wait_ready()
        time.sleep(0.3)  # well after its first (and in this run only) refresh
        subprocess.run(
            [
                *(sys.executable, "-m", "bench.inserter", str(db), "--owner-id", str(run.dbs.owner_id)),
                *("--count", str(sizes.pickup_shares), "--over", str(sizes.pickup_seconds)),
                *("--due-after", str(sizes.pickup_due_after)),
            ],
            cwd=REPO_ROOT,
            check=True,
            timeout=sizes.pickup_seconds + 60,  # run() kills the inserter on timeout
        )
        last_deadline = time.time() + sizes.pickup_due_after
        grace = max(2.0, 2 * sizes.sweep_interval)
        done_at = wait_drained(proc, watcher, last_deadline, give_up_at=last_deadline + grace)
    result = expiry_summary(db)
    result.update(
        drained=done_at is not None,
        late_over_10ms=sum(x > 0.010 for x in result["_late"]),
        observed_for_s=grace,
        exit_code=proc.exit_code,
    )
    if engine.kind == "seed" and result["not_expired"]:
        interval = reference_interval(DEFAULT_LIFETIME_S)
        result["note"] = (
            f"{result['not_expired']} never seen: created after its refresh, they wait for the next one "
            f"({interval / 3600:g} h later)"
        )
    return result


def refresh(run: Run) -> dict:
    """Our daemon's window query on a big table: its time and its plan."""
    sizes = run.sizes
    path, bound = run.quiet_table(sizes.refresh_rows, sizes.refresh_window)
    probe = subprocess.run(
        [
            *(sys.executable, "-m", "bench.refresh_probe", str(path)),
            *("--until", repr(bound), "--runs", str(sizes.refresh_runs)),
        ],
        cwd=REPO_ROOT,
        env=django_env(path),
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    found = json.loads(probe.stdout)
    # The window is read in pages of one or two statements each; the first
    # three show every kind (the first page; a resumed one's two).
    statements = found["statements_sql"]
    shown = statements[:3]
    conn = connect(path)
    try:
        plan = [row[-1] for sql in shown for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
        for sql in statements:
            conn.execute(sql).fetchall()  # warm, as the probe did
        raw, longest = [], []
        for _ in range(sizes.refresh_runs):
            rows, took = 0, []
            for sql in statements:
                started = time.perf_counter()
                rows += len(conn.execute(sql).fetchall())
                took.append(time.perf_counter() - started)
            raw.append(sum(took))
            longest.append(max(took))
    finally:
        conn.close()
    full_scan = any(step.startswith("SCAN") and "INDEX" not in step for step in plan)
    return {
        "table_rows": sizes.refresh_rows,
        "window_rows": rows,
        "probe_rows": found["rows"],
        "statements": len(statements),
        "query_ms_median": _median(raw) * 1000,
        "query_ms_min": min(raw) * 1000,
        "longest_statement_ms_median": _median(longest) * 1000,
        "load_window_ms_median": _median(found["load_window_s"]) * 1000,
        "runs": sizes.refresh_runs,
        "sql": "\n        ".join(shown),
        "plan": plan,
        "uses_index": any("share_active_expiry_idx" in step for step in plan) and not full_scan,
        # A sort the index cannot give (e.g. by the model's default ordering)
        # reads every window row from the table as well.
        "temp_sort": any("TEMP B-TREE" in step for step in plan),
    }


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


PER_ENGINE = {"spread": spread, "rate": rate, "burst": burst, "idle": idle, "pickup": pickup}


def run_scenarios(run: Run, names: list[str]) -> dict:
    results: dict[str, dict] = {}
    for name in names:
        if name == "refresh":
            run.say("refresh: timing the window query")
            results[name] = refresh(run)
            continue
        results[name] = {}
        for engine in run.engines:
            if name in DAEMON_ONLY and engine != DAEMON:
                continue
            run.say(f"{name}: {engine.label} ...")
            started = time.monotonic()
            try:
                result = public(PER_ENGINE[name](run, engine))
            except (EngineFailed, subprocess.SubprocessError) as exc:
                result = {"error": str(exc)}
            results[name][engine.key] = result
            run.say(f"{name}: {engine.label} done in {time.monotonic() - started:.1f} s")
    return results
