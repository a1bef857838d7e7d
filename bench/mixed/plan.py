"""How much the mixed benchmark measures: the full run and the smoke run."""

from dataclasses import dataclass, field

from bench.web.plan import default_workers


@dataclass(frozen=True)
class Plan:
    seconds: int = 10  # how long shares fall due; the load runs a little longer on both sides
    due_per_s: int = 1000  # seeded shares falling due each second, evenly spread
    connections: int = 16  # wrk's connections, all on one server
    # Of the requests, the share that are POST /api/shares/ (the rest download
    # one hot link): 0.5 is 8 downloading clients and 8 creating ones on average.
    create_fraction: float = 0.5
    # The lifetime of the shares created over REST (seconds, the API's minimum
    # is 1): they fall due during the run too, announced to the daemon as in
    # production, and are reported apart from the seeded ones.
    created_lifetime_s: int = 2
    warmup_seconds: int = 1  # wrk on the same mix before the daemon starts; 0: none
    workers: int = field(default_factory=default_workers)
    threads: int = 4


FULL = Plan()
SMOKE = Plan(seconds=2, due_per_s=200, warmup_seconds=0, workers=2, threads=2)
