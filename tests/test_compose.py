"""docker/compose.yaml, checked where Docker is absent: it parses, builds one image that
every app service runs, and holds no secret: each one comes from a variable it requires."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

COMPOSE = Path(__file__).resolve().parent.parent / "docker" / "compose.yaml"
# Compose's ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}.
VARIABLE = re.compile(r"\$\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")
SECRET_NAME = re.compile(r"SECRET|PASSWORD|TOKEN|_KEY$")
URL_WITH_PASSWORD = re.compile(r"://[^/@:]+:.+@")


class Refused(Exception):
    """Compose would not start: a required variable is unset or empty."""

    def __init__(self, variable: str, message: str) -> None:
        super().__init__(f"{variable}: {message}")
        self.variable = variable


def interpolate(value: str, variables: dict[str, str]) -> str:
    """`value` as Compose interpolates it from `variables`."""

    def one(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        value = variables.get(name)
        missing = value is None or (value == "" and op is not None and op.startswith(":"))
        if missing and op and op.endswith("?"):
            raise Refused(name, arg)
        if missing and op and op.endswith("-"):
            return arg
        return value or ""

    return VARIABLE.sub(one, value.replace("$$", "\0")).replace("\0", "$")


APPS = ("web", "worker", "beat", "migrate")  # the services that run the image


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def environments(services: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (service, name, str(value))
        for service, spec in services.items()
        for name, value in (spec.get("environment") or {}).items()
    ]


def test_one_build_makes_the_image_that_web_worker_and_migrate_run(
    services: dict[str, Any],
) -> None:
    built = [name for name, spec in services.items() if "build" in spec]

    assert built == ["web"]
    image = services["web"]["image"]
    assert image
    assert {services[name]["image"] for name in ("web", "worker", "beat", "migrate")} == {image}
    assert services["web"]["build"]["dockerfile"] == "docker/Dockerfile"


def test_web_and_worker_start_after_migrations_succeed(services: dict[str, Any]) -> None:
    for name in ("web", "worker", "beat"):
        condition = services[name]["depends_on"]["migrate"]["condition"]
        assert condition == "service_completed_successfully", name
    assert "migrate" in services["migrate"]["command"]
    assert services["migrate"]["depends_on"]["db"]["condition"] == "service_healthy"


def test_web_and_worker_count_metrics_into_one_volume_emptied_before_they_start(
    services: dict[str, Any],
) -> None:
    for name in ("web", "worker"):
        assert "metrics:/app/var/metrics" in services[name]["volumes"], name
    assert "metrics_reset" in services["migrate"]["command"]


def test_compose_refuses_to_start_without_its_secrets(services: dict[str, Any]) -> None:
    required = set()
    for service, name, value in environments(services):
        if not (SECRET_NAME.search(name) or URL_WITH_PASSWORD.search(value)):
            continue
        for variables in ({}, {"SECRET_KEY": "", "POSTGRES_PASSWORD": ""}):
            with pytest.raises(Refused) as refused:
                interpolate(value, variables)
        required.add((service, name, refused.value.variable))

    assert required == {
        ("db", "POSTGRES_PASSWORD", "POSTGRES_PASSWORD"),
        *{(app, "SECRET_KEY", "SECRET_KEY") for app in APPS},
        *{(app, "DATABASE_URL", "POSTGRES_PASSWORD") for app in APPS},
    }


def test_one_beat_sends_the_schedules_ticks_and_the_web_tier_runs_none(
    services: dict[str, Any],
) -> None:
    beats = [name for name, spec in services.items() if " beat" in str(spec.get("command"))]

    assert beats == ["beat"]
    assert services["beat"]["command"].startswith("celery -A agentbuilder beat")
    assert "deploy" not in services["beat"]  # never replicated
    # With a broker the server's embedded beat is off (BEAT_EMBEDDED's default).
    assert services["web"]["environment"]["CELERY_BROKER_URL"]
    assert "BEAT_EMBEDDED" not in services["web"]["environment"]


def test_every_secret_in_compose_is_the_value_of_a_variable(services: dict[str, Any]) -> None:
    variables = {"SECRET_KEY": "s" * 50, "POSTGRES_PASSWORD": "p" * 48}
    seen = {}
    for service, name, value in environments(services):
        seen[(service, name)] = interpolate(value, variables)

    assert seen[("web", "SECRET_KEY")] == variables["SECRET_KEY"]
    assert seen[("db", "POSTGRES_PASSWORD")] == variables["POSTGRES_PASSWORD"]
    assert seen[("worker", "DATABASE_URL")] == (
        f"postgres://agentbuilder:{variables['POSTGRES_PASSWORD']}@db:5432/agentbuilder"
    )
