"""Scenario sizes: the full defaults, the --smoke preset, and nothing else.

Every field becomes a command-line flag (`--spread-shares 5000`), so a size
is changed without editing code, and the JSON records the sizes a run used.
"""

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Sizes:
    # spread: shares falling due uniformly over a few seconds.
    spread_shares: int = 10_000
    spread_seconds: float = 10.0
    # rate: our daemon at 10,000 expiries a second.
    rate_shares: int = 100_000
    rate_seconds: float = 10.0
    # 0: deadlines in random id order (the worst case: each expiry dirties its
    # own table and index pages); 1: ids follow deadlines, as when shares with
    # one lifetime were created over time (neighbours share pages).
    rate_ordered: int = 0
    # burst: shares falling due at one instant.
    burst_shares: int = 100_000
    # idle: a big table with nothing due, against a small one.
    idle_rows: int = 1_000_000
    idle_small_rows: int = 10_000
    idle_seconds: float = 10.0
    # pick-up: shares inserted by another process while the engine runs.
    pickup_shares: int = 1_000
    pickup_seconds: float = 2.0
    pickup_due_after: float = 0.2
    # refresh: the daemon's window query on a big table.
    refresh_rows: int = 1_000_000
    refresh_window: int = 10_000
    refresh_runs: int = 7
    # machine floor: Event.wait(1 ms) overshoot samples.
    floor_waits: int = 2_000
    # engine settings
    sweep_interval: float = 1.0
    daemon_refresh_interval: float = 60.0
    daemon_coalesce: float = 0.001  # runexpiry --coalesce (its default, EXPIRY_COALESCE)


FULL = Sizes()

# Small enough that the whole run takes well under a minute; the numbers are
# only sanity checks, never compared with the targets.
SMOKE = replace(
    FULL,
    spread_shares=300,
    spread_seconds=1.0,
    rate_shares=2_000,
    rate_seconds=1.0,
    burst_shares=3_000,
    idle_rows=20_000,
    idle_small_rows=2_000,
    idle_seconds=1.0,
    pickup_shares=40,
    pickup_seconds=0.4,
    refresh_rows=20_000,
    refresh_window=1_000,
    refresh_runs=3,
    floor_waits=200,
    sweep_interval=0.5,
)
