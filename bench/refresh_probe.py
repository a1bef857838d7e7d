"""Time our daemon's window query from inside Django, and show its SQL.

    python -m bench.refresh_probe DB --until UNIX_SECONDS [--runs N]

Run with the benchmark's Django environment (SQLITE_PATH=DB). It calls the
real expiry.window.read_window(), so the queries measured are exactly the ones
the daemon issues at each refresh when nothing is due (the window's pages, growing), captured with their
parameters inlined, and prints JSON: the pages' SQL, the rows returned, and
each call's time (the queries plus Django turning rows into ShareDeadline
objects). The benchmark then times the bare SQL and reads its plan with
sqlite3.
"""

import argparse
import json
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.refresh_probe")
    parser.add_argument("db")
    parser.add_argument("--until", type=float, required=True)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from expiry.store import ShareStore
    from expiry.window import read_window

    store = ShareStore()
    with CaptureQueriesContext(connection) as captured:
        rows = len(read_window(store, args.until))  # also warms the page cache
    statements_sql = [q["sql"] for q in captured.captured_queries if "expires_at" in q["sql"]]
    timings = []
    for _ in range(args.runs):
        start = time.perf_counter()
        read_window(store, args.until)
        timings.append(time.perf_counter() - start)
    json.dump({"statements_sql": statements_sql, "rows": rows, "load_window_s": timings}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
