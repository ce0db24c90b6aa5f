"""The form of an agent file: YAML written to diff well, the agent and its versions,
and the references a config makes to other rows by id, which a file makes by name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import yaml
from pydantic import Field

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


class _Loader(yaml.SafeLoader):
    """YAML 1.1 reads an unquoted 2025-01-31 as a date; configs are JSON, so it stays text."""


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
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader


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
