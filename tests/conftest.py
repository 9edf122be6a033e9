"""Shared fixtures: where the read-only inputs in ../shared are."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# This machine type's speed varies a lot (CPU steal up to 50 %): no per-example
# deadline and no "input generation is slow" health check, so that property
# tests fail on properties, not on timing. Tests may still set their own.
settings.register_profile("iosched", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("iosched")

REPO = Path(__file__).resolve().parent.parent


def shared_dir() -> Path | None:
    """The project's shared inputs: $IOSCHED_SHARED, ../shared, /work/shared."""
    for cand in (os.environ.get("IOSCHED_SHARED"), REPO.parent / "shared", "/work/shared"):
        if cand and Path(cand, "golden").is_dir():
            return Path(cand)
    return None


@pytest.fixture(scope="session")
def shared():
    d = shared_dir()
    if d is None:
        pytest.skip("the shared inputs (../shared with golden/ and data/) are not available")
    return d
