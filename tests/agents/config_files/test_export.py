"""`manage.py agents export`: one YAML file per agent that diffs well, with references
to other agents and MCP servers by name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agents.models import Agent, Environment
from agents.services.versions import version_add
from tests.factories import CALCULATOR_CONFIG
from tests.support.config_files import agents, latest, read

pytestmark = pytest.mark.django_db


def test_export_names_task_agents_and_mcp_servers_instead_of_ids(
    exported: Path, env: Environment
) -> None:
    assert sorted(p.name for p in exported.iterdir()) == ["caller.yaml", "summarizer.yaml"]
    caller = read(exported / "caller.yaml")
    assert list(caller) == ["name", "displayName", "description", "agentType", "versions"]
    [version] = caller["versions"]
    assert list(version) == ["number", "versionLabel", "notes", "config"]
    stored = latest(env, "caller").config_shown
    assert list(version["config"]) == list(stored)
    tools = version["config"]["tools"]
    in_place = ["agentName" if k == "agentId" else k for k in stored["tools"][1]]
    assert list(tools[1]) == in_place
    assert tools[1]["agentName"] == "summarizer"
    assert tools[2]["mcpServerReferences"][0]["name"] == "weather"
    assert "id" not in tools[2]["mcpServerReferences"][0]


def test_export_is_readable_and_deterministic(exported: Path, env: Environment) -> None:
    text = (exported / "caller.yaml").read_text(encoding="utf-8")
    agents("export", "--environment", env.name, "--out", exported)
    assert (exported / "caller.yaml").read_text(encoding="utf-8") == text
    assert "Tu es un assistant précis." in text  # unicode kept, not escaped
    assert "systemPrompt: |" in text  # a prompt of several lines is a literal block
    assert "!!" not in text
    assert "\nversions:\n  - number: 1\n" in text  # a list indented under its key


def test_export_all_versions_lists_every_version_in_order(
    env: Environment, make_agent: Callable[..., Agent], admin_user: Any, tmp_path: Path
) -> None:
    agent = make_agent("calc")
    for n in (2, 3):
        config = {**CALCULATOR_CONFIG, "systemPrompt": f"prompt {n}"}
        version_add(
            user=admin_user, agent=agent, config=config, version_label=f"v{n}", notes=f"n{n}"
        )

    agents("export", "--out", tmp_path / "all", "--all-versions")
    agents("export", "--out", tmp_path / "current")

    every = read(tmp_path / "all" / "calc.yaml")["versions"]
    assert [(v["number"], v["versionLabel"], v["notes"]) for v in every] == [
        (1, "", ""),
        (2, "v2", "n2"),
        (3, "v3", "n3"),
    ]
    shown = [v.config_shown for v in agent.versions.order_by("number")]
    assert [v["config"] for v in every] == shown
    assert [v["number"] for v in read(tmp_path / "current" / "calc.yaml")["versions"]] == [3]


def test_export_then_import_keeps_the_author_s_keys_and_order(
    other_env: Environment,
    make_agent: Callable[..., Agent],
    admin_user: Any,
    tmp_path: Path,
) -> None:
    written = {
        "systemPrompt": "You compute.\nShow the steps.",
        "tools": CALCULATOR_CONFIG["tools"],
        "llmModelId": CALCULATOR_CONFIG["llmModelId"],
    }
    agent = make_agent("calc")
    version_add(user=admin_user, agent=agent, config=written)

    agents("export", "--out", tmp_path)
    text = (tmp_path / "calc.yaml").read_text(encoding="utf-8")
    [exported] = read(tmp_path / "calc.yaml")["versions"]
    assert list(exported["config"]) == list(written)  # no default added, none reordered
    assert "systemPrompt: |-\n" in text  # the prompt's lines as lines

    agents("import", tmp_path, "--environment", other_env.name)
    again = latest(other_env, "calc")
    assert list(again.config_shown) == list(written)
    assert again.config["inferenceConfig"]["maxTokens"] == 4000
