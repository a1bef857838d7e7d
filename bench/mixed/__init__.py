"""The mixed benchmark: the expiry daemon's lateness while gunicorn serves
downloads and creates shares (target: p99 <= 5 ms, docs/benchmarks.md, "Lateness under web load").
Run `python -m bench.mixed`."""
