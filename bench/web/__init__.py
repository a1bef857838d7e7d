"""The web benchmark: our views over HTTP against the floor of the same server.

`python -m bench.web` (see __main__.py) builds its own databases and files,
starts gunicorn as `make run` does, and drives it with wrk on loopback.
"""
