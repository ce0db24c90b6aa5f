"""`name@version` as every protocol that names an agent by one string reads it."""

from __future__ import annotations

import pytest

from agents.protocols.names import agent_reference


@pytest.mark.parametrize(
    ("text", "reference"),
    [
        ("calculator", ("calculator", "latest")),
        (" calculator@3 ", ("calculator", "3")),
        ("calculator@latest", ("calculator", "latest")),
        ("calculator@prod", ("calculator", "prod")),
        (
            "a.b-c_d@0b8e5b5e-4a62-4e0a-9c9e-1c1c1c1c1c1c",
            ("a.b-c_d", "0b8e5b5e-4a62-4e0a-9c9e-1c1c1c1c1c1c"),
        ),
    ],
)
def test_a_name_and_its_version(text: str, reference: tuple[str, str]) -> None:
    assert agent_reference(text) == reference


@pytest.mark.parametrize("text", ["", "  ", "calculator@", "@3", "a@b@c", "two words"])
def test_what_names_no_agent(text: str) -> None:
    assert agent_reference(text) is None
