"""Resumable uploads over the tus 1.0 protocol (docs/api.md, "Resumable uploads (tus)")."""
