"""Import: agent files into an environment through the services, all or nothing."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from django.db import transaction

from agentbuilder.errors import DomainError, ErrorItem, Invalid, NotFound
from agentbuilder.users import User
from agentbuilder.wire import parse
from agents.access.permissions import Action
from agents.audit.context import audit_origin
from agents.config_files.documents import (
    BY_NAME,
    AgentEntry,
    FileRefused,
    Loc,
    VersionEntry,
    read_document,
    references,
    renamed,
)
from agents.mcp_registry.selectors import mcp_server_by_ref
from agents.models import Agent, AuditSurface, Environment
from agents.selectors.agents import agent_get_by_name
from agents.services.agents import agent_create, agent_update
from agents.services.config_check import config_validate
from agents.services.versions import version_add

SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Problem:
    file: str
    loc: Loc
    msg: str

    def __str__(self) -> str:
        where = f"{'.'.join(map(str, self.loc))}: " if self.loc else ""
        return f"{self.file}: {where}{self.msg}"


class ImportFailed(Exception):
    """Some files cannot be imported; nothing was written."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__("\n".join(map(str, problems)))
        self.problems = list(problems)


@dataclass(frozen=True)
class Change:
    file: str
    agent: str
    action: Literal["create", "update", "unchanged"]
    version: int | None = None  # the number of the version added
    details: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.action == "create":
            return f"create agent {self.agent} with version {self.version}"
        if self.action == "unchanged":
            return f"unchanged {self.agent}"
        what = "; ".join(self.details)
        if self.version is not None:
            return f"add version {self.version} to {self.agent}: {what}"
        return f"update {self.agent}: {what}"


@dataclass(frozen=True)
class _File:
    path: str
    entry: AgentEntry
    data: dict[str, Any]  # as read, to locate errors in the file's own terms


def agents_import(
    *, user: User, environment: Environment, paths: Sequence[Path], dry_run: bool = False
) -> list[Change]:
    """Import agent files (or directories of `*.yaml`) into `environment` as `user`, all
    or nothing; `dry_run` computes the same changes and rolls them back.

    Raises ImportFailed listing every problem with its file and the path in it.
    """
    found, problems = _paths(paths)
    files = _load(found, problems)
    changes: dict[str, Change] = {}
    # Recorded in the audit log as the import's (its address, when a request runs it).
    with audit_origin(AuditSurface.IMPORT), transaction.atomic():
        # Task agents first: a tool agent may call one that this import creates.
        for file in sorted(files, key=lambda f: f.entry.agent_type == "tool"):
            try:
                with transaction.atomic():
                    changes[file.path] = _import_one(user, environment, file)
            except Invalid as exc:
                problems += [Problem(file.path, _file_loc(file, e.loc), e.msg) for e in exc.errors]
            except DomainError as exc:
                problems.append(Problem(file.path, (), exc.detail))
        if problems or dry_run:
            transaction.set_rollback(True)
    if problems:
        order = {path: position for position, path in enumerate(found)}
        raise ImportFailed(sorted(problems, key=lambda p: order.get(p.file, -1)))
    return [changes[file.path] for file in files]


def _paths(paths: Sequence[Path]) -> tuple[list[str], list[Problem]]:
    found, problems = [], []
    for path in paths:
        if path.is_dir():
            inside = sorted(p for p in path.iterdir() if p.suffix in SUFFIXES and p.is_file())
            if not inside:
                problems.append(Problem(str(path), (), "no .yaml files in this directory"))
            found += [str(p) for p in inside]
        elif path.is_file():
            found.append(str(path))
        else:
            problems.append(Problem(str(path), (), "no such file or directory"))
    return found, problems


def _load(found: list[str], problems: list[Problem]) -> list[_File]:
    """The files that parse, each agent once; the problems of the others go to `problems`."""
    files: list[_File] = []
    seen: dict[str, str] = {}
    for path in found:
        try:
            data = read_document(Path(path))
            entry = parse(AgentEntry, data)
        except FileRefused as exc:
            problems.append(Problem(path, (), str(exc)))
            continue
        except OSError as exc:  # unreadable: permissions, a directory's race
            problems.append(Problem(path, (), f"cannot be read: {exc.strerror or exc}"))
            continue
        except Invalid as exc:
            problems += [Problem(path, e.loc, e.msg) for e in exc.errors]
            continue
        other = seen.setdefault(entry.name.lower(), path)
        if other != path:
            problems.append(Problem(path, ("name",), f"agent '{entry.name}' is also in {other}"))
            continue
        files.append(_File(path, entry, data))
    return files


def _import_one(user: User, environment: Environment, file: _File) -> Change:
    entry = file.entry
    current = entry.versions[-1]
    prefix: Loc = ("versions", len(entry.versions) - 1, "config")
    config = _with_ids(current.config, user, environment, prefix)
    try:
        agent = agent_get_by_name(
            user=user, environment=environment, name=entry.name, action=Action.EDIT
        )
    except NotFound:
        _, version = agent_create(
            user=user,
            environment=environment,
            name=entry.name,
            agent_type=entry.agent_type,
            config=config,
            description=entry.description,
            display_name=entry.display_name,
            version_label=current.version_label,
            notes=current.notes,
        )
        return Change(file.path, entry.name, "create", version.number)
    if agent.agent_type != entry.agent_type:
        msg = f"'{agent.name}' is a {agent.agent_type} agent here; an agent's type cannot change"
        raise Invalid.at(("agentType",), msg)
    stored = config_validate(
        user=user, environment=environment, agent_type=agent.agent_type, data=config, loc=prefix
    )
    details = _update_fields(user, agent, entry)
    number = _add_version(user, agent, current, stored, prefix[:-1], details)
    if number is None and not details:
        return Change(file.path, agent.name, "unchanged")
    return Change(file.path, agent.name, "update", number, tuple(details))


def _update_fields(user: User, agent: Agent, entry: AgentEntry) -> list[str]:
    wanted = {"display_name": entry.display_name, "description": entry.description}
    changes = {k: v for k, v in wanted.items() if getattr(agent, k) != v}
    if changes:
        agent_update(user=user, agent=agent, changes=changes)
    spelled = {"display_name": "displayName", "description": "description"}
    return [f"{spelled[k]} changed" for k in changes]


def _add_version(
    user: User,
    agent: Agent,
    current: VersionEntry,
    stored: dict[str, Any],
    loc: Loc,
    details: list[str],
) -> int | None:
    """Add a version when the file's differs from the latest; its number, or None."""
    latest = agent.versions.order_by("-number").first()
    if latest is None:  # pragma: no cover - every agent is created with version 1
        raise Invalid.at(loc, f"agent '{agent.name}' has no version")
    keys = _changed_keys(latest.config, stored)
    changed = [
        field
        for field, before, after in [
            ("versionLabel", latest.version_label, current.version_label),
            ("notes", latest.notes, current.notes),
        ]
        if before != after
    ]
    if not keys and not changed:
        return None
    label = current.version_label
    labelled = agent.versions.filter(version_label=label).values_list("number", flat=True)
    holder = labelled.first() if label else None
    if holder is not None:
        msg = f"version {holder} of '{agent.name}' has this label already: change or clear it"
        raise Invalid.at((*loc, "versionLabel"), msg)
    version = version_add(
        user=user,
        agent=agent,
        config=stored if keys else None,
        version_label=label,
        notes=current.notes,
        loc=(*loc, "config"),
    )
    if keys:
        details.insert(0, f"config keys changed: {', '.join(keys)}")
    details += [f"{field} changed" for field in changed]
    return version.number


def _changed_keys(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    keys = [k for k in after if before.get(k, ...) != after[k]]
    return keys + [k for k in before if k not in after]


def _with_ids(config: dict[str, Any], user: User, environment: Environment, prefix: Loc) -> Any:
    """The config with references by name replaced by this environment's ids. Raises
    Invalid at a name that is not found."""
    config = copy.deepcopy(config)
    errors: list[ErrorItem] = []
    for loc, holder, index, kind in references(config):
        name_key, id_key = BY_NAME[kind]
        ref = holder[index]
        if name_key not in ref:
            continue
        if id_key in ref:
            msg = f"give {name_key} or {id_key}, not both"
            errors.append(ErrorItem((*prefix, *loc, name_key), msg))
            continue
        found = _resolve(kind, str(ref[name_key]), user, environment)
        if found is None:
            what = "agent" if kind == "agent" else "MCP server"
            msg = f"unknown {what} '{ref[name_key]}' in environment '{environment.name}'"
            errors.append(ErrorItem((*prefix, *loc, name_key), msg))
            continue
        holder[index] = renamed(ref, name_key, id_key, found)
    if errors:
        raise Invalid(errors)
    return config


def _resolve(kind: str, name: str, user: User, environment: Environment) -> str | None:
    if kind == "mcp":
        server = mcp_server_by_ref(environment, name)
        return str(server.pk) if server else None
    try:
        agent = agent_get_by_name(user=user, environment=environment, name=name)
    except NotFound:
        return None
    return str(agent.pk)


def _file_loc(file: _File, loc: Loc) -> Loc:
    """A service's error location in the file's terms: its `body` is the file, its config
    the file's last version's, and an id the file gave by name is that name."""
    if loc[:2] == ("body", "config"):
        loc = ("versions", len(file.entry.versions) - 1, "config", *loc[2:])
    elif loc[:1] == ("body",):
        loc = loc[1:]
    node: Any = file.data
    for part in loc[:-1]:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return loc
    for name_key, id_key in BY_NAME.values():
        named = isinstance(node, dict) and name_key in node and id_key not in node
        if loc and loc[-1] == id_key and named:
            return (*loc[:-1], name_key)
    return loc
