"""Metrics in Prometheus's text format at /metrics, for whoever holds METRICS_TOKEN.

Every figure is read from the database when Prometheus scrapes (collector.py):
the history (ShareEvent rows) for what happened, the rows themselves for
what is. So any web node answers for the whole service, however many there
are, and nothing is counted in a process that a restart would reset. A
counter read from the history goes down when the retention purge deletes
old shares with their events: Prometheus takes that for a counter reset,
which rate() and increase() handle.

Modules: collector.py (the figures, a few aggregate queries), views.py (the
token, the answer), urls.py.
"""
