"""A bucket out of reach, told apart from a missing object or a refused
request: StorageUnavailable (a 503 to try again), raised at the edge of
every bucket operation a request makes."""

from botocore.exceptions import BotoCoreError, ClientError


class StorageUnavailable(Exception):
    """The file store cannot be reached now (a bucket's endpoint down, or
    answering with its own errors): a 503 to try again, never a 500, and
    never taken for missing bytes. The storage that can be out of reach
    raises it (storage.buckets); everything else only catches it."""


def out_of_reach(error: Exception) -> bool:
    """Whether `error` says the bucket cannot be reached now (no connection,
    a timeout, its own 5xx or SlowDown), rather than a missing object or a
    request it refuses."""
    if isinstance(error, BotoCoreError):
        return True
    if isinstance(error, ClientError):
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return status >= 500 or error.response.get("Error", {}).get("Code") == "SlowDown"
    return False


def reachable(method):
    """Raise StorageUnavailable for a storage method whose bucket is out of reach."""

    def wrapped(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (BotoCoreError, ClientError) as error:
            if out_of_reach(error):
                raise StorageUnavailable(f"the bucket is out of reach: {error}") from error
            raise

    wrapped.__name__, wrapped.__doc__ = method.__name__, method.__doc__
    return wrapped
