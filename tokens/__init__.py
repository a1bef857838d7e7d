"""API tokens: several per user, each named, optionally expiring, kept only
as the digest of a key shown once (models.py), issued, revoked and checked
by service.py, revoked with the password they were made under
(revocation.py)."""
