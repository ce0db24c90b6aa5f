"""The invoke routes end to end: every test here runs on the backends and example agents of
tests/support/backends.py and tests/support/native.py."""

from __future__ import annotations

from tests.support.aliases import calc  # noqa: F401
from tests.support.backends import (  # noqa: F401 (fixtures)
    backend,
    bedrock_server,
    fake_backend,
    model_usages,
    openai_server,
)
from tests.support.native import calculator, person_extractor, review_task  # noqa: F401
from tests.support.rag import corpus  # noqa: F401
