"""Agent files that cost far more to read than their size (issue 25, item 9): each is
refused with the file and line named, and nothing of the import is written.

No timing: each refusal is shown to come before the work it prevents. An alias bomb is
refused at its first anchor (the line of the error is where the anchor is, so nothing
after it was composed, let alone expanded); deep nesting at the first level past the
bound (its column); an oversized file by its size, though its first bytes would have
been refused as deep nesting had they been parsed. bench/yaml_bombs.py measures the same
inputs, with and without the bounds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management.base import CommandError

from agents.config_files.documents import MAX_FILE_BYTES, FileRefused, yaml_load
from agents.models import Agent, Environment
from tests.agents.config_files.bombs import alias_bomb
from tests.support.config_files import agents, read, write

pytestmark = pytest.mark.django_db


def refused(exported: Path, environment: Environment) -> str:
    """The import of the directory fails; its message. Nothing is written."""
    with pytest.raises(CommandError) as raised:
        agents("import", exported, "--environment", environment.name)
    assert not Agent.objects.filter(environment=environment).exists()
    message = str(raised.value)
    assert message.startswith("nothing imported:")
    return message


def test_an_alias_bomb_is_refused_at_its_first_anchor(
    exported: Path, other_env: Environment
) -> None:
    bomb = exported / "bomb.yaml"
    bomb.write_text(alias_bomb(), encoding="utf-8")  # 425 bytes; expanded, 9**9 strings

    message = refused(exported, other_env)

    assert (
        f"{bomb}: line 5, column 8: anchors and aliases (&a, *a) are not accepted: write values out"
    ) in message
    assert "caller.yaml" not in message  # the other files were fine
    assert "summarizer.yaml" not in message


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        pytest.param("base: &b {x: 1}\nother: *b\n", 1, 7, id="an anchor"),
        pytest.param("x: *b\n", 1, 4, id="an alias to nothing"),
        pytest.param("a: 1\nb:\n  <<: *base\n", 3, 7, id="a merge key"),
    ],
)
def test_any_anchor_or_alias_is_refused_where_it_is(text: str, line: int, column: int) -> None:
    with pytest.raises(FileRefused) as raised:
        yaml_load(text)
    assert str(raised.value).startswith(f"line {line}, column {column}: anchors and aliases")


def test_deep_nesting_is_a_clear_error_not_a_recursion_error(
    exported: Path, other_env: Environment
) -> None:
    deep = exported / "deep.yaml"
    deep.write_text("[" * 100_000, encoding="utf-8")

    message = refused(exported, other_env)

    assert f"{deep}: line 1, column 101: nested deeper than 100 levels" in message


def test_nesting_up_to_the_bound_is_read() -> None:
    nested = yaml_load("x: " + "[" * 99 + "]" * 99)
    depth = 0
    while isinstance(nested, dict | list) and nested:
        nested = nested["x"] if isinstance(nested, dict) else nested[0]
        depth += 1
    assert depth == 99  # 100 levels: the mapping, and 99 lists down to the empty one
    with pytest.raises(FileRefused, match="column 103: nested deeper than 100 levels"):
        yaml_load("x: " + "[" * 100 + "]" * 100)


def test_a_file_over_the_size_bound_is_refused_without_being_parsed(
    exported: Path, other_env: Environment
) -> None:
    large = exported / "large.yaml"
    # Parsed, its first line would be refused as nesting: the size is checked first.
    large.write_bytes(b"[" * 200 + b"\n" + b"#" * (MAX_FILE_BYTES - 200))
    assert large.stat().st_size == MAX_FILE_BYTES + 1

    message = refused(exported, other_env)

    assert f"{large}: larger than {MAX_FILE_BYTES} bytes, the most an agent file may be" in message
    assert "nested" not in message


def test_a_file_that_is_not_utf8_is_named(exported: Path, other_env: Environment) -> None:
    latin = exported / "latin.yaml"
    latin.write_bytes("name: caf\u00e9\n".encode("latin-1"))

    message = refused(exported, other_env)

    assert f"{latin}: not UTF-8 text: byte 9 is 0xe9" in message


def test_text_the_database_cannot_hold_is_refused_at_its_path(
    exported: Path, other_env: Environment
) -> None:
    document = read(exported / "caller.yaml")
    document["versions"][0]["config"]["systemPrompt"] = "before\0after"
    write(exported / "caller.yaml", document)

    message = refused(exported, other_env)

    where = "versions.0.config.systemPrompt"
    assert f"caller.yaml: {where}: text must not contain NUL characters" in message
