"""The mixed benchmark: the expiry daemon's lateness while gunicorn serves
downloads and creates shares (target: p99 <= 5 ms, see docs/benchmarks.md).
Run `python -m bench.mixed`."""
