"""The microcloud command-line client: the REST API and the tus uploads as
docs/api.md describes them, nothing private."""

__version__ = "0.1.0"
