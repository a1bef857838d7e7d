"""The idle benchmark's targets on made-up totals (nothing is timed)."""

import pytest

from bench import idle

pytestmark = pytest.mark.bench


@pytest.mark.parametrize(("pss_mb", "status"), [(120.0, "met"), (120.1, "MISSED")])
def test_the_whole_service_fits_in_120_mb_of_pss(pss_mb, status):
    total = {"cpu_percent": 0.01, "max_wakeups_per_s": 0.1, "pss_mb": pss_mb}
    (pss,) = [t for t in idle.targets(total) if t["target"].startswith("idle PSS")]
    assert pss["status"] == status
    assert pss["limit"] == 120.0
