"""Export: an environment's agents, one YAML document each."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from agentbuilder.users import User
from agents.config_files.documents import BY_NAME, references, renamed, yaml_dump
from agents.mcp_registry.selectors import mcp_server_by_ref
from agents.models import AgentVersion, Environment
from agents.selectors.agents import agent_list


@dataclass(frozen=True)
class ExportedFile:
    file_name: str
    text: str
    versions: int
    warnings: tuple[str, ...]


def agents_export(
    *, user: User, environment: Environment, all_versions: bool = False
) -> list[ExportedFile]:
    """The environment's agents that `user` may READ, one YAML document each, by name,
    with their latest version or (`all_versions`) every version, oldest first."""
    agents = list(agent_list(user=user, environment=environment))
    versions = AgentVersion.objects.filter(agent__in=agents).order_by("agent_id", "number")
    if not all_versions:
        versions = versions.order_by("agent_id", "-number").distinct("agent_id")
    by_agent: dict[Any, list[AgentVersion]] = {}
    for version in versions:
        by_agent.setdefault(version.agent_id, []).append(version)
    names = {str(agent.pk): agent.name for agent in agents}
    files = []
    for agent in agents:
        warnings: list[str] = []
        entries = [
            {
                "number": v.number,
                "versionLabel": v.version_label,
                "notes": v.notes,
                "config": _with_names(v.config_shown, environment, names, warnings, v.number),
            }
            for v in by_agent.get(agent.pk, [])
        ]
        document = {
            "name": agent.name,
            "displayName": agent.display_name,
            "description": agent.description,
            "agentType": agent.agent_type,
            "versions": entries,
        }
        text = yaml_dump(document)
        files.append(ExportedFile(f"{agent.name}.yaml", text, len(entries), tuple(warnings)))
    return files


def _with_names(
    config: Any, environment: Environment, agents: dict[str, str], warnings: list[str], n: int
) -> Any:
    config = copy.deepcopy(config)
    for loc, holder, index, kind in references(config):
        name_key, id_key = BY_NAME[kind]
        ref = holder[index]
        if id_key not in ref:
            continue
        if kind == "agent":
            name = agents.get(str(ref[id_key]))
        else:
            server = mcp_server_by_ref(environment, str(ref[id_key]))
            name = server.name if server else None
        if name is None:
            where = ".".join(map(str, loc))
            warnings.append(
                f"version {n}, {where}: {ref[id_key]} is not in environment "
                f"'{environment.name}' (or not readable): kept as {id_key}"
            )
            continue
        holder[index] = renamed(ref, id_key, name_key, name)
    return config
