"""`manage.py agents import`: files move between environments by name; a version is added
only where a file differs; nothing is written on a dry run or when any file is invalid."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management.base import CommandError

from agents.models import Agent, AgentVersion, Environment, McpServer
from agents.services.versions import version_add
from tests.factories import CALCULATOR_CONFIG, UserFactory
from tests.support.config_files import PROMPT, agents, latest, read, version_count, write

pytestmark = pytest.mark.django_db


def test_round_trip_into_another_environment_resolves_names_there(
    exported: Path, env: Environment, other_env: Environment, admin_user: Any
) -> None:
    output = agents("import", exported, "--environment", other_env.name)

    assert "create agent caller with version 1" in output
    assert "create agent summarizer with version 1" in output
    summarizer = latest(other_env, "summarizer")
    caller = latest(other_env, "caller")
    assert summarizer.config == latest(env, "summarizer").config
    tools = caller.config["tools"]
    assert tools[1]["agentId"] == str(summarizer.agent_id)
    weather = McpServer.objects.get(environment=other_env, name="weather")
    assert tools[2]["mcpServerReferences"][0]["id"] == str(weather.pk)
    original = latest(env, "caller").config
    assert list(caller.config) == list(original)  # key order kept
    assert caller.config["systemPrompt"] == PROMPT
    assert caller.created_by == admin_user  # no --user: the first superuser


def test_reimporting_unchanged_files_adds_no_version(
    exported: Path, env: Environment, other_env: Environment
) -> None:
    agents("import", exported, "--environment", other_env.name)
    before = {e: version_count(e) for e in (env, other_env)}

    into_source = agents("import", exported, "--environment", env.name)
    into_target = agents("import", exported, "--environment", other_env.name)

    assert into_source == into_target == "unchanged caller\nunchanged summarizer\n"
    assert {e: version_count(e) for e in (env, other_env)} == before


def test_a_changed_file_adds_one_version_and_keeps_the_old_ones(
    exported: Path, env: Environment
) -> None:
    document = read(exported / "caller.yaml")
    document["versions"][0]["config"]["systemPrompt"] = "Be brief."
    document["versions"][0]["config"]["maxIterations"] = 3
    document["versions"][0]["notes"] = "shorter"
    write(exported / "caller.yaml", document)
    first = latest(env, "caller")

    output = agents("import", exported / "caller.yaml", "--environment", env.name)

    expected = "add version 2 to caller: config keys changed: systemPrompt, maxIterations"
    assert output == f"{expected}; notes changed\n"
    versions = list(first.agent.versions.order_by("number"))
    assert [v.number for v in versions] == [1, 2]
    assert versions[0].config == first.config
    assert versions[1].config["systemPrompt"] == "Be brief."
    assert versions[1].config["tools"][1]["agentId"] == first.config["tools"][1]["agentId"]
    assert versions[1].notes == "shorter"


def test_description_changes_update_the_agent_without_a_version(
    exported: Path, env: Environment
) -> None:
    document = read(exported / "summarizer.yaml")
    document["description"] = "Summaries for managers"
    write(exported / "summarizer.yaml", document)

    output = agents("import", exported / "summarizer.yaml", "--environment", env.name)

    assert output == "update summarizer: description changed\n"
    agent = Agent.objects.get(environment=env, name="summarizer")
    assert agent.description == "Summaries for managers"
    assert agent.versions.count() == 1


def test_dry_run_writes_nothing_and_prints_the_plan(
    exported: Path, env: Environment, other_env: Environment
) -> None:
    document = read(exported / "summarizer.yaml")
    document["versions"][0]["config"]["systemPrompt"] = "Summarise: {{ text }}"
    write(exported / "summarizer.yaml", document)
    before = version_count(env)

    into_source = agents("import", exported, "--environment", env.name, "--dry-run")
    into_target = agents("import", exported, "--dry-run", "--environment", other_env.name)

    assert into_source.splitlines() == [
        "unchanged caller",
        "add version 2 to summarizer: config keys changed: systemPrompt",
        "dry run into 'default' as root: nothing was written",
    ]
    assert "create agent caller with version 1" in into_target
    assert version_count(env) == before
    assert not Agent.objects.filter(environment=other_env).exists()


def test_an_invalid_file_among_several_writes_nothing_and_names_file_and_field(
    exported: Path, other_env: Environment
) -> None:
    document = read(exported / "caller.yaml")
    document["versions"][0]["config"]["tools"][0]["funcName"] = "nope"
    write(exported / "caller.yaml", document)

    with pytest.raises(CommandError) as raised:
        agents("import", exported, "--environment", other_env.name)

    path = exported / "caller.yaml"
    assert f"{path}: versions.0.config.tools.0.funcName: unknown function 'nope'" in str(
        raised.value
    )
    assert "summarizer" not in str(raised.value)
    assert not Agent.objects.filter(environment=other_env).exists()


@pytest.mark.parametrize(
    ("change", "where", "msg"),
    [
        pytest.param(
            lambda d: d["versions"][0]["config"]["tools"][1].update(agentName="ghost"),
            "versions.0.config.tools.1.agentName",
            "unknown agent 'ghost' in environment 'default'",
            id="unknown-agent-name",
        ),
        pytest.param(
            lambda d: d["versions"][0]["config"]["tools"][1].update(agentName="caller"),
            "versions.0.config.tools.1.agentName",
            "agent 'caller' is a tool agent, not a task agent",
            id="agent-name-of-a-tool-agent",
        ),
        pytest.param(
            lambda d: d["versions"][0]["config"]["tools"][2]["mcpServerReferences"][0].update(
                name="radio"
            ),
            "versions.0.config.tools.2.mcpServerReferences.0.name",
            "unknown MCP server 'radio' in environment 'default'",
            id="unknown-mcp-server",
        ),
        pytest.param(
            lambda d: d["versions"][0]["config"].update(systemPromt="typo"),
            "versions.0.config.systemPromt",
            "unknown field 'systemPromt'",
            id="unknown-config-key",
        ),
        pytest.param(
            lambda d: d.update(agentType="robot"),
            "agentType",
            "Input should be 'tool', 'rag' or 'task'",
            id="bad-agent-type",
        ),
        pytest.param(
            lambda d: d.update(name="no spaces"),
            "name",
            "1 to 100 characters",
            id="bad-name",
        ),
    ],
)
def test_a_bad_reference_or_field_is_reported_at_its_path_in_the_file(
    exported: Path,
    env: Environment,
    change: Callable[[dict[str, Any]], None],
    where: str,
    msg: str,
) -> None:
    document = read(exported / "caller.yaml")
    change(document)
    write(exported / "caller.yaml", document)
    before = (Agent.objects.count(), version_count(env))

    with pytest.raises(CommandError) as raised:
        agents("import", exported, "--environment", env.name)

    assert f"caller.yaml: {where}: {msg}" in str(raised.value)
    assert (Agent.objects.count(), version_count(env)) == before


def test_broken_yaml_names_the_file_and_line(exported: Path, other_env: Environment) -> None:
    (exported / "broken.yaml").write_text("name: x\n  agentType: [tool\n", encoding="utf-8")

    with pytest.raises(CommandError, match=r"broken\.yaml: line \d+, column \d+"):
        agents("import", exported, "--environment", other_env.name)

    assert not Agent.objects.filter(environment=other_env).exists()


def test_an_agent_type_cannot_change(exported: Path, env: Environment) -> None:
    document = read(exported / "summarizer.yaml")
    document["agentType"] = "rag"
    document["versions"][0]["config"] = {"llmModelId": "local.demo-v1"}
    write(exported / "summarizer.yaml", document)

    with pytest.raises(CommandError, match="agentType: 'summarizer' is a task agent here"):
        agents("import", exported, "--environment", env.name)


def test_a_new_config_under_a_label_already_used_is_refused_at_the_label(
    exported: Path, env: Environment, admin_user: Any
) -> None:
    agent = Agent.objects.get(environment=env, name="summarizer")
    version_add(user=admin_user, agent=agent, config=None, version_label="stable")
    document = read(exported / "summarizer.yaml")
    document["versions"][0]["versionLabel"] = "stable"
    document["versions"][0]["config"]["systemPrompt"] = "Summarise: {{ text }}"
    write(exported / "summarizer.yaml", document)

    with pytest.raises(CommandError) as raised:
        agents("import", exported / "summarizer.yaml", "--environment", env.name)

    assert "versions.0.versionLabel: version 2 of 'summarizer' has this label already" in str(
        raised.value
    )
    assert agent.versions.count() == 2


def test_an_all_versions_file_imports_its_last_version_only(
    env: Environment,
    other_env: Environment,
    make_agent: Callable[..., Agent],
    admin_user: Any,
    tmp_path: Path,
) -> None:
    agent = make_agent("calc")
    config = {**CALCULATOR_CONFIG, "systemPrompt": "newest"}
    version_add(user=admin_user, agent=agent, config=config, version_label="v2")
    agents("export", "--out", tmp_path, "--all-versions")

    output = agents("import", tmp_path / "calc.yaml", "--environment", other_env.name)

    assert output == "create agent calc with version 1\n"
    [imported] = AgentVersion.objects.filter(agent__environment=other_env)
    assert imported.config == latest(env, "calc").config
    assert imported.version_label == "v2"


def test_import_acts_as_the_named_user_and_needs_its_permissions(
    exported: Path, env: Environment, other_env: Environment, owner: Any
) -> None:
    document = read(exported / "summarizer.yaml")
    document["versions"][0]["config"]["systemPrompt"] = "Summarise: {{ text }}"
    write(exported / "summarizer.yaml", document)
    agents("import", exported, "--environment", env.name, "--user", "owner")
    assert latest(env, "summarizer").created_by == owner

    UserFactory(username="nobody")

    with pytest.raises(CommandError, match="Environment 'other' not found"):
        agents("import", exported, "--environment", other_env.name, "--user", "nobody")
    with pytest.raises(CommandError, match="no active user 'ghost'"):
        agents("import", exported, "--user", "ghost")
