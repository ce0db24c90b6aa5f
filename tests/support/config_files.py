"""Helpers and a fixture for `manage.py agents export` / `agents import`: run the command, read
and write its YAML, and an environment exported with a task, a tool agent and an MCP server."""

from __future__ import annotations

import copy
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from agents.models import Agent, AgentVersion, Environment, McpServer
from tests.factories import CALCULATOR_CONFIG

PROMPT = "Tu es un assistant précis.\nUse the summariser for long texts.\n"


def agents(*args: Any) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("agents", *map(str, args), stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


def read(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def write(path: Path, document: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), "utf-8")


def latest(environment: Environment, name: str) -> AgentVersion:
    agent = Agent.objects.get(environment=environment, name=name, deleted_at=None)
    return agent.versions.order_by("-number").first()  # type: ignore[return-value]


def version_count(environment: Environment) -> int:
    return AgentVersion.objects.filter(agent__environment=environment).count()


def caller_config(task: Agent, server: McpServer) -> dict[str, Any]:
    return {
        **copy.deepcopy(CALCULATOR_CONFIG),
        "systemPrompt": PROMPT,
        "tools": [
            *copy.deepcopy(CALCULATOR_CONFIG["tools"]),
            {
                "toolType": "task_agent",
                "name": "summarise",
                "description": "Summarises a text",
                "agentId": str(task.pk),
            },
            {"toolType": "mcp", "mcpServerReferences": [{"id": str(server.pk)}]},
        ],
    }


@pytest.fixture
def exported(
    env: Environment, other_env: Environment, make_agent: Callable[..., Agent], tmp_path: Path
) -> Path:
    """`summarizer` (task) and `caller` (tool, calling it and the MCP server `weather`) in
    `env`, exported; `other_env` has its own `weather` server."""
    task = make_agent("summarizer", "task")
    server = McpServer.objects.create(environment=env, name="weather", url="http://127.0.0.1:9/mcp")
    McpServer.objects.create(environment=other_env, name="weather", url="http://127.0.0.1:10/mcp")
    make_agent("caller", "tool", config=caller_config(task, server))
    agents("export", "--environment", env.name, "--out", tmp_path / "out")
    return tmp_path / "out"
