"""The YAML of agent files: whatever a config holds reads back as it was written."""

from __future__ import annotations

from typing import Any

import pytest

from agents.config_files.documents import yaml_dump, yaml_load

TEXTS = [
    "one line",
    "two\nlines\n",
    "no final newline\nhere",
    "blank lines at the end\n\n\n",
    "  leading spaces\nsecond",
    "trailing spaces  \nsecond",
    "tab\tand\nnewline",
    "ümlaut, 漢字, emoji 🙂\nsecond",
    "yes",
    "2025-01-31",
    "{{ jinja }}: {context_str}",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_a_string_reads_back_unchanged(text: str) -> None:
    document = {"systemPrompt": text, "nested": [{"value": text}]}
    assert yaml_load(yaml_dump(document)) == document


def test_numbers_booleans_and_empty_containers_read_back_unchanged() -> None:
    document: dict[str, Any] = {
        "temperature": 0.0,
        "small": 1e-05,
        "max": 200000,
        "flag": False,
        "none": None,
        "empty": {},
        "list": [],
    }
    assert yaml_load(yaml_dump(document)) == document


def test_a_date_written_by_hand_stays_text() -> None:
    assert yaml_load("released: 2025-01-31\n") == {"released": "2025-01-31"}


def test_keys_keep_their_order_and_lines_are_not_folded() -> None:
    long = "word " * 60
    text = yaml_dump({"zeta": 1, "alpha": long.strip(), "mid": {"b": 1, "a": 2}})
    assert text.splitlines()[:2] == ["zeta: 1", f"alpha: {long.strip()}"]
    assert text.index("b: 1") < text.index("a: 2")
