"""`manage.py agents import-promptfoo CONFIG --dataset NAME`: a promptfoo configuration's
tests into a dataset, and the scorers to run its experiments with
(docs/api.md#importing-a-promptfoo-configuration)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from agentbuilder.errors import DomainError, ErrorItem, Invalid
from agentbuilder.users import User
from agents.access.permissions import Action, require_on_environment
from agents.evals.imports import PromptfooImported, promptfoo_dataset_import
from agents.models import AgentType, Environment

ACTION = "import-promptfoo"


class _DryRun(Exception):
    def __init__(self, done: PromptfooImported) -> None:
        self.done = done


def add_parser(actions: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = actions.add_parser(
        ACTION,
        help="a promptfoo configuration's tests into a dataset (made if new); all or nothing",
    )
    parser.add_argument("config", type=Path, metavar="CONFIG", help="promptfooconfig.yaml")
    parser.add_argument("--dataset", required=True, help="the dataset's name")
    parser.add_argument("--agent-type", choices=AgentType.values, help="a new dataset's")
    parser.add_argument("--judge-model", help="the catalog model grading llm-rubric assertions")
    parser.add_argument(
        "--input-var", help="the var holding a tool or RAG agent's user message (not the prompt)"
    )
    parser.add_argument("--dry-run", action="store_true", help="check it all, write nothing")
    return parser


def run(command: BaseCommand, user: User, env: Environment, options: dict[str, Any]) -> None:
    path: Path = options["config"]
    try:
        config = path.read_bytes()
    except OSError as exc:
        raise CommandError(f"{path}: {exc.strerror}") from None
    try:
        require_on_environment(user, env, Action.EDIT)
        done = _import(user, env, config, options)
    except Invalid as exc:
        raise CommandError(f"nothing imported:\n{_lines(path, exc.errors)}") from None
    except DomainError as exc:
        raise CommandError(f"nothing imported: {exc.detail}") from None
    except _DryRun as dry:
        done = dry.done
        command.stdout.write(f"dry run: {len(done.imported.cases)} cases; nothing was written")
    else:
        made = "made, with" if done.created else "given"
        command.stdout.write(
            f"dataset '{done.dataset.name}' ({done.dataset.agent_type} agents) {made} "
            f"{len(done.imported.cases)} cases: revision {done.revision}"
        )
    command.stdout.write("scorers: " + json.dumps(done.imported.scorers))
    if done.imported.warnings:
        command.stderr.write(_lines(path, done.imported.warnings))


def _import(
    user: User, env: Environment, config: bytes, options: dict[str, Any]
) -> PromptfooImported:
    with transaction.atomic():
        done = promptfoo_dataset_import(
            user=user,
            environment=env,
            dataset_name=options["dataset"],
            config=config,
            agent_type=options["agent_type"],
            judge_model=options["judge_model"],
            input_var=options["input_var"],
        )
        if options["dry_run"]:
            raise _DryRun(done)  # every check made, every write rolled back
    return done


def _lines(path: Path, errors: list[ErrorItem]) -> str:
    return "\n".join(f"{path}: {'.'.join(map(str, e.loc))}: {e.msg}" for e in errors)
