"""What the admin's tests share (tests/support/admin.py): an OpenAI-compatible model that
fails, and an agent with three versions."""

from __future__ import annotations

from tests.support.admin import calc, failing_openai  # noqa: F401 (fixtures)
