"""`manage.py agents export` / `agents import`: an environment's agents as YAML files, so
configs can live in git and move between environments and installations; `agents
import-promptfoo`: a promptfoo configuration's tests into a dataset; `agents eval`: an
experiment for a CI pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from agentbuilder.errors import Conflict, Invalid, NotFound, PermissionDenied
from agentbuilder.users import User
from agents.access.environments import (
    DEFAULT_ENVIRONMENT,
    environment_create,
    environment_resolve,
)
from agents.audit.context import audit_origin
from agents.config_files import ImportFailed, agents_export, agents_import
from agents.management.commands import _eval, _import_promptfoo
from agents.models import AuditSurface, Environment


class Command(BaseCommand):
    help = "Export an environment's agents to YAML files (one per agent), or import them."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(
            dest="action", required=True, metavar="{export,import,import-promptfoo,eval}"
        )
        export = actions.add_parser("export", help="write one <agent name>.yaml per agent")
        export.add_argument("--out", required=True, type=Path, help="directory to write to")
        export.add_argument(
            "--all-versions", action="store_true", help="every version, not only the latest"
        )
        load = actions.add_parser(
            "import",
            help="create missing agents and add a version where a file differs; all or nothing",
        )
        load.add_argument(
            "paths",
            nargs="+",
            type=Path,
            metavar="DIR_OR_FILE",
            help="files, or directories of *.yaml",
        )
        load.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
        load.add_argument(
            "--create-environment",
            action="store_true",
            help="create the --environment if there is none of that name",
        )
        promptfoo = _import_promptfoo.add_parser(actions)
        evaluate = _eval.add_parser(actions)
        for sub in (export, load, promptfoo, evaluate):
            sub.add_argument("--environment", default=DEFAULT_ENVIRONMENT, help="name or id")
            sub.add_argument(
                "--user", help="username to act as (default: the first superuser, by id)"
            )

    def handle(self, *args: Any, **options: Any) -> None:
        user = _user(options["user"])
        name = options["environment"]
        try:
            env = environment_resolve(user=user, claim=None, header=name)
        except NotFound as exc:
            if options["action"] != "import":
                raise CommandError(exc.detail) from None
            if not options["create_environment"]:
                raise CommandError(f"{exc.detail} Add --create-environment to create it.") from None
            env = None
        if env is None:
            self._import_creating(user, name, options["paths"], options["dry_run"])
        elif options["action"] == "export":
            self._export(user, env, options["out"], options["all_versions"])
        elif options["action"] == _import_promptfoo.ACTION:
            _import_promptfoo.run(self, user, env, options)
        elif options["action"] == _eval.ACTION:
            _eval.run(self, user, env, options)
        else:
            self._import(user, env, options["paths"], options["dry_run"])

    def _import_creating(self, user: User, name: str, paths: list[Path], dry_run: bool) -> None:
        """The environment and the import, all or nothing: a failed import leaves no empty
        environment behind, and a dry run creates neither."""
        with audit_origin(AuditSurface.IMPORT), transaction.atomic():
            try:
                env = environment_create(user=user, name=name)
            except (Invalid, PermissionDenied, Conflict) as exc:
                raise CommandError(f"cannot create environment '{name}': {exc}") from None
            self.stdout.write(f"create environment {env.name}")
            self._import(user, env, paths, dry_run)
            if dry_run:
                transaction.set_rollback(True)

    def _export(self, user: User, env: Environment, out: Path, all_versions: bool) -> None:
        files = agents_export(user=user, environment=env, all_versions=all_versions)
        out.mkdir(parents=True, exist_ok=True)
        for file in files:
            (out / file.file_name).write_text(file.text, encoding="utf-8")
            versions = "version" if file.versions == 1 else "versions"
            self.stdout.write(f"{file.file_name} ({file.versions} {versions})")
            for warning in file.warnings:
                self.stderr.write(f"{file.file_name}: {warning}")
        self.stdout.write(f"exported {len(files)} agents of '{env.name}' to {out}")

    def _import(self, user: User, env: Environment, paths: list[Path], dry_run: bool) -> None:
        try:
            changes = agents_import(user=user, environment=env, paths=paths, dry_run=dry_run)
        except ImportFailed as exc:
            raise CommandError(f"nothing imported:\n{exc}") from None
        for change in changes:
            self.stdout.write(str(change))
        if dry_run:
            self.stdout.write(f"dry run into '{env.name}' as {user.username}: nothing was written")


def _user(username: str | None) -> Any:
    users = get_user_model().objects.filter(is_active=True)
    if username:
        user = users.filter(username=username).first()
        if user is None:
            raise CommandError(f"no active user '{username}'")
        return user
    user = users.filter(is_superuser=True).order_by("pk").first()
    if user is None:
        raise CommandError("no superuser to act as: create one or name a user with --user")
    return user
