"""The mixed benchmark: the expiry daemon's lateness while gunicorn serves
downloads and creates shares (issue 12, point 7). Run `python -m bench.mixed`."""
