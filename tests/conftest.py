"""Shared fixtures: where the read-only inputs in ../shared are."""

import os
from pathlib import Path

import pytest

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
