"""The HTTP status of a run that failed, on every protocol's non-streaming answer."""

from __future__ import annotations

from typing import assert_never

from agents.runtime.failures import FailureCode


def failure_status(code: FailureCode) -> int:
    """The client's fault is a 400, a spent budget a 402 (as the refusal before a run), a
    model that timed out a 504, anything else the model, a tool or the platform did a 502."""
    match code:
        case FailureCode.INVALID_REQUEST | FailureCode.TEMPLATE_LIMIT | FailureCode.CALL_TOO_DEEP:
            return 400
        case FailureCode.BUDGET_EXCEEDED:
            return 402
        case FailureCode.FORBIDDEN:
            return 403
        case FailureCode.PROVIDER_TIMEOUT:
            return 504
        case (
            FailureCode.UNSUPPORTED
            | FailureCode.PROVIDER_ERROR
            | FailureCode.RETRIEVAL_UNAVAILABLE
            | FailureCode.MAX_ITERATIONS
            | FailureCode.STRUCTURED_OUTPUT_INVALID
            | FailureCode.OUTPUT_INVALID
            | FailureCode.CANCELED
            | FailureCode.INTERRUPTED
            | FailureCode.NOT_STARTED
            | FailureCode.APPROVAL_EXPIRED
            | FailureCode.INTERNAL_ERROR
        ):
            return 502
        case _:
            assert_never(code)
