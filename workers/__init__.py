"""How a background worker process (runexpiry, runwebhooks) starts and
stops: the system checks it runs, and its stop on SIGTERM or SIGINT. Knows
nothing of what the worker does."""
