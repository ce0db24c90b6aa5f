"""A tools/call as a run request (agents.protocols.mcp_server.request)."""

from __future__ import annotations

import uuid

import pytest

from agentbuilder.errors import ErrorItem, Invalid
from agents.protocols.mcp_server.request import located_in_arguments, tool_reference


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("calculator", ("calculator", "latest")),
        ("calculator@3", ("calculator", "3")),
        ("calculator@prod", ("calculator", "prod")),
        ("my.agent-v2_x@latest", ("my.agent-v2_x", "latest")),
    ],
)
def test_a_tool_name_names_an_agent_and_optionally_its_version(
    name: str, expected: tuple[str, str]
) -> None:
    assert tool_reference(name) == expected


@pytest.mark.parametrize(
    "name", ["", "a" * 100_000, "a@b@c", "calculator@", "calculator@0", "calc@no way"]
)
def test_a_malformed_tool_name_is_invalid_at_name(name: str) -> None:
    with pytest.raises(Invalid) as refused:
        tool_reference(name)
    assert refused.value.errors[0].loc == ("name",)
    assert len(refused.value.errors[0].msg) < 100  # the name is never quoted back


def test_the_run_paths_input_locations_become_argument_locations() -> None:
    run_id = uuid.uuid4()
    problems = Invalid(
        [ErrorItem(("body", "inputs", "text"), "Field required"), ErrorItem(("name",), "bad")],
        run_id=run_id,
    )
    located = located_in_arguments(problems)
    assert [e.loc for e in located.errors] == [("arguments", "text"), ("name",)]
    assert located.run_id == run_id
