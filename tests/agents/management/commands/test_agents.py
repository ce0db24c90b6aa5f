"""`manage.py agents import --create-environment`: an import into an environment that is not
there yet creates it with the import, all or nothing; without the flag the error says so."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError

from agents.models import Agent, AuditRecord, Environment
from tests.factories import CALCULATOR_CONFIG
from tests.support.config_files import agents, write


def agent_file(directory: Path, config: dict[str, Any] = CALCULATOR_CONFIG) -> Path:
    directory.mkdir(exist_ok=True)
    write(
        directory / "calc.yaml",
        {"name": "calc", "agentType": "tool", "versions": [{"config": config}]},
    )
    return directory


def test_an_unknown_environment_is_refused_with_the_flag_that_creates_it(
    admin_user: Any, tmp_path: Path
) -> None:
    with pytest.raises(
        CommandError,
        match=re.escape("Environment 'staging' not found. Add --create-environment to create it."),
    ):
        agents("import", agent_file(tmp_path / "agents"), "--environment", "staging")

    assert not Environment.objects.filter(name="staging").exists()


def test_create_environment_creates_it_and_imports_into_it(admin_user: Any, tmp_path: Path) -> None:
    files = agent_file(tmp_path / "agents")

    out = agents("import", files, "--environment", "staging", "--create-environment")

    assert out.splitlines() == ["create environment staging", "create agent calc with version 1"]
    staging = Environment.objects.get(name="staging")
    assert Agent.objects.filter(environment=staging, name="calc").exists()
    record = AuditRecord.objects.get(object_type="environment", action="create")
    assert (record.environment_id, record.surface) == (staging.pk, "import")
    # Once there, the flag changes nothing.
    again = agents("import", files, "--environment", "staging", "--create-environment")
    assert again.splitlines() == ["unchanged calc"]


def test_a_dry_run_or_a_failed_import_leaves_no_environment(
    admin_user: Any, tmp_path: Path
) -> None:
    good = agent_file(tmp_path / "good")
    bad = agent_file(tmp_path / "bad", {**CALCULATOR_CONFIG, "llmModelId": "nope"})

    planned = agents(
        "import", good, "--environment", "staging", "--create-environment", "--dry-run"
    )
    with pytest.raises(CommandError, match="nothing imported"):
        agents("import", bad, "--environment", "staging", "--create-environment")

    assert planned.splitlines()[:2] == [
        "create environment staging",
        "create agent calc with version 1",
    ]
    assert not Environment.objects.filter(name="staging").exists()
    assert not AuditRecord.objects.filter(object_type="environment").exists()


def test_a_user_who_may_not_create_environments_is_told_so(owner: Any, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=re.escape("agents.add_environment")):
        agents(
            "import",
            agent_file(tmp_path / "agents"),
            "--environment",
            "staging",
            "--create-environment",
            "--user",
            owner.username,
        )
