"""python -m bench: measure the expiry engines and print the tables.

Run from the repository root with the project's virtualenv, e.g.
    .venv/bin/python -m bench --json bench/results/latest.json
    .venv/bin/python -m bench --smoke
    .venv/bin/python -m bench --scenarios spread,idle --spread-shares 2000
    .venv/bin/python -m bench --render bench/results/latest.json
Progress goes to stderr, the tables to stdout.
"""

import argparse
import dataclasses
import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from bench import floor, report
from bench.db import Databases
from bench.engines import ENGINES
from bench.scenarios import SCENARIOS, Run, run_scenarios
from bench.sizes import FULL, SMOKE


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description="Benchmark the share-expiry engines.")
    parser.add_argument("--smoke", action="store_true", help="small sizes: the whole run takes under a minute")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated subset of {SCENARIOS}")
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated subset of {tuple(ENGINES)}")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write every figure to FILE as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (databases, engine logs)")
    parser.add_argument("--render", type=Path, metavar="FILE", help="print the tables of a saved JSON run and exit")
    sizes = parser.add_argument_group("sizes (defaults: full run; --smoke changes them, a flag overrides both)")
    for f in dataclasses.fields(FULL):
        sizes.add_argument(
            f"--{f.name.replace('_', '-')}", type=type(f.default), metavar="N", help=f"default {f.default}"
        )
    args = parser.parse_args(argv)
    for name, chosen, known in (("scenarios", args.scenarios, SCENARIOS), ("engines", args.engines, tuple(ENGINES))):
        unknown = set(chosen.split(",")) - set(known)
        if unknown:
            parser.error(f"unknown {name}: {', '.join(sorted(unknown))}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        print(report.render(report.rebuild(json.loads(args.render.read_text()))))
        return 0
    base = SMOKE if args.smoke else FULL
    sizes = dataclasses.replace(
        base, **{f.name: getattr(args, f.name) for f in dataclasses.fields(base) if getattr(args, f.name) is not None}
    )
    scenarios = [s for s in SCENARIOS if s in args.scenarios.split(",")]
    engines = [e for k, e in ENGINES.items() if k in args.engines.split(",")]
    # SIGTERM unwinds like Ctrl-C, so every engine is stopped by its finally.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    def say(message: str) -> None:
        print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    started = time.monotonic()
    meta = report.machine()
    workdir = Path(tempfile.mkdtemp(prefix="bench-"))
    try:
        say(f"work directory {workdir}; scenarios {', '.join(scenarios)}")
        dbs = Databases(workdir)
        dbs.prepare()
        say(f"machine floor: {sizes.floor_waits} x Event.wait(1 ms)")
        floor_figures = floor.event_wait_overshoot(sizes.floor_waits)
        idle_floor = None
        if "idle" in scenarios:
            say(f"machine floor: a bare 50 ms wait loop for {sizes.idle_seconds:g} s")
            idle_floor = floor.wait_loop_idle(sizes.idle_seconds)
        run = Run(dbs, sizes, engines, say)
        if set(scenarios) - {"refresh"}:
            run.warm_up()
        results = run_scenarios(run, scenarios)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    meta["duration_s"] = round(time.monotonic() - started, 1)
    meta["command"] = " ".join(["python -m bench", *(argv if argv is not None else sys.argv[1:])])
    full = report.build(
        meta, dataclasses.asdict(sizes), floor_figures, idle_floor, run.startup_s, results, sizes.sweep_interval
    )
    full["meta"]["preset"] = "smoke" if args.smoke else "full"
    print(report.render(full))
    if args.json:
        report.write_json(full, args.json)
        say(f"wrote {args.json}")
    say(f"done in {meta['duration_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
