"""The failure codes a run ends with, and the status each protocol answers them with."""

from __future__ import annotations

import json

import pytest

from agents.protocols.failures import failure_status
from agents.runtime.failures import FailureCode

CLIENTS = {FailureCode.INVALID_REQUEST, FailureCode.TEMPLATE_LIMIT, FailureCode.CALL_TOO_DEEP}
EXPECTED = {
    **dict.fromkeys(CLIENTS, 400),
    FailureCode.FORBIDDEN: 403,  # a schedule's owner who may no longer run the agent
    FailureCode.PROVIDER_TIMEOUT: 504,
    FailureCode.BUDGET_EXCEEDED: 402,  # as the refusal before a run (docs/api.md#budgets)
}


@pytest.mark.parametrize("code", list(FailureCode))
def test_every_code_has_a_status(code: FailureCode) -> None:
    expected = EXPECTED.get(code, 502)
    assert failure_status(code) == expected


def test_a_code_is_its_wire_string() -> None:
    # Encoders write the code as it is: into JSON, protobuf strings and f-strings.
    assert json.dumps({"code": FailureCode.MAX_ITERATIONS}) == '{"code": "max_iterations"}'
    assert f"{FailureCode.CANCELED}" == str(FailureCode.CANCELED) == "canceled"


@pytest.mark.parametrize(
    ("stored", "read"),
    [
        ("interrupted", FailureCode.INTERRUPTED),
        ("provider_timeout", FailureCode.PROVIDER_TIMEOUT),
        ("written_by_a_later_version", FailureCode.INTERNAL_ERROR),
        (None, FailureCode.INTERNAL_ERROR),
    ],
)
def test_a_stored_code_is_read_back(stored: object, read: FailureCode) -> None:
    assert FailureCode(stored) is read
