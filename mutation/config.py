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
    "sharing/models/budget.py": [
        "tests/test_download_limits.py",
        "tests/test_links_ranges.py",
        "tests/test_multi_file_shares.py",
    ],
    "sharing/models/quotas.py": [
        "tests/test_quotas.py",
        "tests/test_uploads_quota.py",
        "tests/test_api_files.py",
    ],
    "sharing/models/downloads.py": [
        "tests/test_download_limits.py",
        "tests/test_download_tally.py",
        "tests/test_links_ranges.py",
        "tests/test_multi_file_shares.py",
    ],
    "collect/models.py": [
        "tests/test_collect_rules.py",
        "tests/test_collect_api.py",
        "tests/test_collect_race.py",
    ],
    "collect/places.py": [
        "tests/test_collect_rules.py",
        "tests/test_collect_api.py",
        "tests/test_collect_race.py",
    ],
    "uploads/models.py": [
        "tests/test_uploads_rules.py",
        "tests/test_uploads_quota.py",
        "tests/test_uploads_lifecycle.py",
        "tests/test_expiry_uploads.py",
        "tests/test_uploads_protocol.py",
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
EQUIVALENT: list[tuple[str, str, str, str, str]] = []
