"""What the mutation run mutates, and which tests judge each module.

The test files of a module are the ones that exercise its rules directly;
they run in this order and stop at the first failure, so the quickest
killers come first. Keep the whole run near 20 minutes on 2 cores
(docs/testing.md has the latest figures).
"""

MODULES: dict[str, list[str]] = {
    "sharing/models/state.py": [
        "tests/test_servable_rule.py",
        "tests/test_end_states.py",
        "tests/test_download_limits.py",
        "tests/test_api_link_rules.py",
        "tests/test_links_http.py",
    ],
    "sharing/models/scans.py": [
        "tests/test_scanning_rule.py",
    ],
    "scanning/queue.py": [
        "tests/test_scanning_rule.py",
        "tests/test_scanning.py",
    ],
    "sharing/models/sealed.py": [
        "tests/test_encrypted_links.py",
    ],
    "sharing/models/budget.py": [
        "tests/test_download_limits.py",
        "tests/test_links_ranges.py",
        "tests/test_multi_file_shares.py",
    ],
    "sharing/models/quotas.py": [
        "tests/test_quotas.py",
        "tests/test_uploads_quota.py",
        "tests/test_api_files.py",
        "tests/test_collect_strangers.py",
    ],
    "sharing/models/downloads.py": [
        "tests/test_download_limits.py",
        "tests/test_download_tally.py",
        "tests/test_links_ranges.py",
        "tests/test_multi_file_shares.py",
    ],
    "collect/models.py": [
        "tests/test_collect_rules.py",
        "tests/test_collect_full.py",
        "tests/test_collect_origins.py",
        "tests/test_collect_api.py",
        "tests/test_collect_race.py",
    ],
    "collect/places.py": [
        "tests/test_collect_rules.py",
        "tests/test_collect_full.py",
        "tests/test_collect_api.py",
        "tests/test_collect_race.py",
        "tests/test_collect_strangers.py",
    ],
    "uploads/models.py": [
        "tests/test_uploads_rules.py",
        "tests/test_uploads_quota.py",
        "tests/test_uploads_lifecycle.py",
        "tests/test_expiry_uploads.py",
        "tests/test_uploads_protocol.py",
    ],
    "tokens/service.py": [
        "tests/test_api_tokens.py",
        "tests/test_api_auth.py",
        "tests/test_web_token.py",
    ],
    "tokens/models.py": [
        "tests/test_api_tokens.py",
        "tests/test_web_token.py",
    ],
    "links/remembered.py": [
        "tests/test_password_memory.py",
        "tests/test_password_throttles.py",
    ],
    "ratelimit/logins.py": [
        "tests/test_login_limits.py",
        "tests/test_login_lockouts.py",
        "tests/test_hardening_logins.py",
    ],
    "signin/oidc/claims.py": [
        "tests/test_signin_oidc_claims.py",
    ],
    "signin/oidc/accounts.py": [
        "tests/test_signin_oidc_claims.py",
    ],
}

# A mutant's tests may take this many times their unmutated duration, plus
# TIMEOUT_SLACK seconds, before the run is stopped and counted as timed out
# (a mutant that turns a wait into an endless one).
TIMEOUT_FACTOR = 3
TIMEOUT_SLACK = 30

# Survivors that cannot change behaviour, each with the reason (kept in
# docs/testing.md too). Matched by module, the stripped source line and the
# mutation, not by line number, so edits elsewhere in a file keep them matched.
LOCK_LINE = 'list(shares.select_for_update(no_key=True).order_by("pk").values_list("pk", flat=True))'
EQUIVALENT: list[tuple[str, str, str, str, str]] = [
    (
        "sharing/models/state.py",
        LOCK_LINE,
        "True",
        "False",
        "locked_now's row lock runs on PostgreSQL only (SQLite has no SELECT ... FOR UPDATE: its IMMEDIATE "
        "transaction already holds the write lock), so the SQLite run cannot reach it. flat=False reads the "
        "locked ids as 1-tuples that are thrown away: equivalent everywhere. no_key=False takes FOR UPDATE "
        "instead of FOR NO KEY UPDATE: the same rows locked, the same answers; it only also blocks other "
        "transactions inserting rows that reference the share (their FOR KEY SHARE) until the commit.",
    ),
    (
        "sharing/models/budget.py",
        "if max_downloads is None or bytes_left is None:",
        "or",
        "and",
        "The database pairs the two (share_budget_with_limit: a limit has a budget, no limit has none; "
        "tests/test_download_limits.py checks the constraint), so either both are None or neither is.",
    ),
    (
        "sharing/models/downloads.py",
        'logger.warning("could not settle a response of share %s", self.share_id, exc_info=True)',
        "True",
        "False",
        "Only the log line's traceback: the bytes stay reserved and the response ends the same either way "
        "(the path needs the database to fail mid-settle, which no test fakes).",
    ),
    (
        "collect/places.py",
        "left = max(0, (upload_request.max_bytes or 0) - upload_request.bytes_taken)",
        "0",
        "1",
        "Only `max_bytes or 0` -> `or 1` (max(0, ...) -> max(1, ...) is killed): the `or` applies when max_bytes "
        "is None (request_max_bytes forbids 0), and then room_q never refuses for bytes, so why_not only "
        "reaches this line with a byte limit set: take_place calls it, its only caller, with the row it read "
        "under the request's lock right after the UPDATE refused, so the row is the one room_q judged.",
    ),
    (
        "uploads/models.py",
        "return False",
        "False",
        "True",
        "Only _delete_locked's `return False` (row is None; remove_if_due's is killed): remove_upload ignores "
        "the result, and remove_if_due calls it only after due().exists() found the row under the row's lock "
        "in the same transaction, so for it the row is always there.",
    ),
    (
        "ratelimit/logins.py",
        "if form is not None and form.errors:",
        "and",
        "or",
        "say_tries_left runs for every admin log-in POST that did not sign in, and the admin's LoginView answers "
        "each of those with its TemplateResponse holding the bound form and its errors (a CSRF failure is "
        "refused by the middleware before the view): the form is never None there, and always has errors.",
    ),
]
