"""The form of an agent file: YAML written to diff well, the agent and its versions,
and the references a config makes to other rows by id, which a file makes by name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field

from agentbuilder.api.parsers import MAX_DEPTH, check_json
from agentbuilder.wire import CamelModel

Loc = tuple[str | int, ...]
# A file's key for a reference -> the stored config's key for it.
BY_NAME = {"agent": ("agentName", "agentId"), "mcp": ("name", "id")}


# ---------------------------------------------------------------- YAML


class _Dumper(yaml.SafeDumper):
    """Block style, lists indented under their key, no anchors: files that diff well."""

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        return super().increase_indent(flow, False)


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Prompts span lines; as literal blocks a changed line is a changed line in git.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


# An agent file is one agent: its versions' configs, each a few KB (the API takes one of at
# most API_MAX_BODY_BYTES, 1 MiB by default). 4 MiB holds an export of hundreds of versions
# and bounds what a file costs to read: PyYAML parses about 1 MiB per second of CPU
# (bench/yaml_bombs.py: 4 MiB in about 4 s).
MAX_FILE_BYTES = 4 * 1024 * 1024


class FileRefused(Exception):
    """A file that is not read: too large, not UTF-8, not YAML, or YAML that could cost far
    more than its size (anchors and aliases, deep nesting)."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        at = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(f"{at}{message}")
        self.message = message
        self.line = line
        self.column = column


class _Refused(yaml.MarkedYAMLError):
    """Well-formed YAML that agent files do not use."""


class _Loader(yaml.SafeLoader):
    """A SafeLoader for agent files, refusing what makes a small file costly.

    Anchors and aliases: a few hundred bytes of aliases stand for gigabytes once anything
    walks the data (a 719-byte file took 33 s and 620 MB to import); an exported file has
    none. Nesting past MAX_DEPTH: the composer recurses per level (100 KB of `[` raised
    RecursionError), and configs past it are refused anyway. Both are refused as the parser
    meets them, before the document is built.

    YAML 1.1 reads an unquoted 2025-01-31 as a date; configs are JSON, so it stays text.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        mark: Any = event.start_mark  # the stubs allow the C parser's marks too
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            name = getattr(event, "anchor", "")
            problem = f"anchors and aliases (&{name}, *{name}) are not accepted: write values out"
            raise _Refused(problem=problem, problem_mark=mark)
        if not isinstance(event, yaml.CollectionStartEvent):
            return super().compose_node(parent, index)
        if self._depth >= MAX_DEPTH:
            problem = f"nested deeper than {MAX_DEPTH} levels"
            raise _Refused(problem=problem, problem_mark=mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _as_text(loader: _Loader, node: yaml.Node) -> Any:
    return loader.construct_yaml_str(node)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _as_text)


def yaml_dump(document: Any) -> str:
    return yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=float("inf"),
    )


def yaml_load(text: str) -> Any:
    """The data of an agent file's text; raises FileRefused saying where and why, and
    Invalid (located) for text the database cannot hold, as the API does for a body."""
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader
    except _Refused as exc:
        raise _located(str(exc.problem), exc.problem_mark) from None
    except yaml.MarkedYAMLError as exc:
        context = f" ({exc.context})" if exc.context else ""
        raise _located(f"not valid YAML: {exc.problem}{context}", exc.problem_mark) from None
    except yaml.YAMLError as exc:
        raise FileRefused(f"not valid YAML: {exc}") from None
    check_json(data, ())
    return data


def yaml_compose(text: str) -> yaml.Node | None:
    """The document of `text` composed but not built, refused as yaml_load refuses (raises
    FileRefused): its nodes know their lines, for errors that name one (a dataset file's
    cases). None for an empty document."""
    loader = _Loader(text)
    try:
        return loader.get_single_node()
    except _Refused as exc:
        raise _located(str(exc.problem), exc.problem_mark) from None
    except yaml.MarkedYAMLError as exc:
        context = f" ({exc.context})" if exc.context else ""
        raise _located(f"not valid YAML: {exc.problem}{context}", exc.problem_mark) from None
    except yaml.YAMLError as exc:
        raise FileRefused(f"not valid YAML: {exc}") from None
    finally:
        loader.dispose()


def yaml_construct(node: yaml.Node, loc: Loc) -> Any:
    """The data of a node yaml_compose made; raises FileRefused (a tag YAML-safe loading
    does not build) and Invalid at `loc` for text the database cannot hold."""
    loader = _Loader("")
    try:
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        raise _located(f"not valid YAML: {exc.problem}", exc.problem_mark) from None
    finally:
        loader.dispose()
    check_json(data, loc)
    return data


def read_document(path: Path) -> Any:
    """The data of the agent file at `path`, read up to MAX_FILE_BYTES; raises FileRefused
    (and Invalid, as yaml_load)."""
    with path.open("rb") as file:
        raw = file.read(MAX_FILE_BYTES + 1)  # one byte past the bound is enough to know
    if len(raw) > MAX_FILE_BYTES:
        raise FileRefused(f"larger than {MAX_FILE_BYTES} bytes, the most an agent file may be")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused(f"not UTF-8 text: byte {exc.start} is {raw[exc.start]:#04x}") from None
    return yaml_load(text)


def _located(message: str, mark: Any) -> FileRefused:
    if mark is None:
        return FileRefused(message)
    return FileRefused(message, mark.line + 1, mark.column + 1)


# ---------------------------------------------------------------- the file


class VersionEntry(CamelModel):
    number: int | None = None  # this installation's; import numbers versions anew
    version_label: str = Field("", max_length=100)
    notes: str = ""
    config: dict[str, Any]


class AgentEntry(CamelModel):
    name: str
    display_name: str = ""
    description: str = ""
    agent_type: Literal["tool", "rag", "task"]
    versions: list[VersionEntry] = Field(min_length=1)


# ---------------------------------------------------------------- references


def references(config: Any) -> Iterator[tuple[Loc, list[Any], int, str]]:
    """Each task agent tool and MCP server reference of a config, stored or from a file:
    its path, the list holding it, its index there, and its kind (a key of BY_NAME)."""
    tools = config.get("tools") if isinstance(config, dict) else None
    if not isinstance(tools, list):
        return
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            continue
        kind = tool.get("toolType", tool.get("tool_type"))
        if kind == "task_agent":
            yield ("tools", index), tools, index, "agent"
        refs = tool.get("mcpServerReferences") if kind == "mcp" else None
        if not isinstance(refs, list):
            continue
        for position, ref in enumerate(refs):
            if isinstance(ref, dict):
                yield ("tools", index, "mcpServerReferences", position), refs, position, "mcp"


def renamed(mapping: dict[str, Any], old: str, new: str, value: Any) -> dict[str, Any]:
    """`mapping` with key `old` replaced by `new` (set to `value`), in the same place."""
    return {(new if k == old else k): (value if k == old else v) for k, v in mapping.items()}
