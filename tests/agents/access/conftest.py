"""What the tests of access share."""

from __future__ import annotations

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _fresh_throttles() -> None:
    cache.clear()  # throttle history lives in the cache and would leak between tests
