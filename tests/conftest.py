"""Shared fixtures. Async tests use anyio's pytest plugin on asyncio."""

from __future__ import annotations

import pytest
from hypothesis import settings

# Property tests check behaviour, not speed: no per-example deadline on a busy 2-core machine.
settings.register_profile("switchboard", deadline=None)
settings.load_profile("switchboard")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
