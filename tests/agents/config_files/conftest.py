"""`manage.py agents export` / `agents import`: an exported environment
(tests/support/config_files.py)."""

from __future__ import annotations

from tests.support.config_files import exported  # noqa: F401 (a fixture)
