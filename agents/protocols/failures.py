"""The HTTP status of a run that failed, on every protocol's non-streaming answer."""

from __future__ import annotations

# The client's fault is a 400 (a RAG agent asked no question, a template over its limit),
# a model that timed out a 504, anything else the model or a tool did a 502.
FAILURE_STATUS = {"provider_timeout": 504, "invalid_request": 400, "template_limit": 400}


def failure_status(code: str) -> int:
    return FAILURE_STATUS.get(code, 502)
