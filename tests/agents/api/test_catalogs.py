"""The catalogs over the API (docs/api.md#catalogs): environments created, by whom, and what
is refused; the model catalog's prices: who may set them, what is refused at which path,
and that a change prices the next run."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission

from agents.access.permissions import Action
from agents.models import AuditRecord, Environment, LLMModel
from tests.conftest import client_for

MINI = "openai/gpt-4o-mini"
URL = f"/v1/models/{MINI}"


def test_a_superuser_sets_a_models_prices_and_their_date(admin_user: Any) -> None:
    client = client_for(admin_user)
    body = {"inputPricePerMTok": 1.5, "outputPricePerMTok": 6, "pricesAsOf": "2026-11-01"}

    answer = client.patch(URL, body, format="json")

    assert answer.status_code == 200, answer.json()
    got = answer.json()
    assert (got["inputPricePerMTok"], got["outputPricePerMTok"]) == (1.5, 6)
    assert got["cachedInputPricePerMTok"] == 0.075  # left out: kept
    assert got["pricesAsOf"] == "2026-11-01"
    listed = {m["id"]: m for m in client.get("/v1/models").json()["models"]}
    assert listed[MINI] == got


def test_clearing_both_prices_makes_the_model_unpriced(admin_user: Any) -> None:
    body = {"inputPricePerMTok": None, "outputPricePerMTok": None}
    got = client_for(admin_user).patch(URL, body, format="json").json()

    assert got["inputPricePerMTok"] is None
    assert LLMModel.objects.get(pk=MINI).output_usd_per_mtok is None


def test_a_user_without_the_catalogs_permission_is_refused(owner: Any) -> None:
    answer = client_for(owner).patch(URL, {"inputPricePerMTok": 0}, format="json")

    assert answer.status_code == 403
    assert LLMModel.objects.get(pk=MINI).input_usd_per_mtok > 0


def test_the_catalogs_permission_is_enough(owner: Any) -> None:
    owner.user_permissions.add(Permission.objects.get(codename="change_llmmodel"))
    answer = client_for(owner).patch(URL, {"outputPricePerMTok": 0.7}, format="json")

    assert answer.status_code == 200, answer.json()
    assert answer.json()["outputPricePerMTok"] == 0.7


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"inputPricePerMTok": -1}, ["body", "inputPricePerMTok"]),
        ({"outputPricePerMTok": 1e9}, ["body", "outputPricePerMTok"]),
        ({"cachedInputPricePerMTok": "cheap"}, ["body", "cachedInputPricePerMTok"]),
        ({"inputPricePerMTok": None}, ["body", "inputPricePerMTok"]),
        ({"pricesAsOf": "yesterday"}, ["body", "pricesAsOf"]),
        ({"pricePerToken": 1}, ["body", "pricePerToken"]),
    ],
)
def test_absurd_prices_are_refused_at_their_path_and_nothing_changes(
    admin_user: Any, body: dict[str, Any], loc: list[str]
) -> None:
    before = LLMModel.objects.get(pk=MINI)

    answer = client_for(admin_user).patch(URL, body, format="json")

    assert answer.status_code == 400
    assert [e["loc"] for e in answer.json()["detail"]] == [loc]
    after = LLMModel.objects.get(pk=MINI)
    assert (after.input_usd_per_mtok, after.prices_as_of) == (
        before.input_usd_per_mtok,
        before.prices_as_of,
    )


def test_an_unknown_model_is_a_404(admin_user: Any) -> None:
    answer = client_for(admin_user).patch("/v1/models/no/such:model", {}, format="json")

    assert answer.status_code == 404


# ---------------------------------------------------------------- environments


def test_a_superuser_creates_an_environment_and_it_is_listed_and_audited(
    admin_user: Any,
) -> None:
    client = client_for(admin_user)

    answer = client.post(
        "/v1/environments", {"name": "staging", "description": "Before prod"}, format="json"
    )

    assert answer.status_code == 201, answer.json()
    got = answer.json()
    assert (got["name"], got["description"]) == ("staging", "Before prod")
    assert got in client.get("/v1/environments").json()["environments"]
    record = AuditRecord.objects.get(object_type="environment", object_id=got["id"])
    assert (record.action, record.surface, str(record.environment_id)) == (
        "create",
        "api",
        got["id"],
    )
    assert record.changes["name"] == {"from": None, "to": "staging"}
    # The new environment is one a request can act in at once.
    agents = client.get("/v1/agents", HTTP_X_ENVIRONMENT="staging")
    assert agents.status_code == 200
    assert agents.json()["agents"] == []


def test_with_the_model_permission_a_user_creates_one_and_holds_every_action_on_it(
    stranger: Any,
) -> None:
    stranger.user_permissions.add(Permission.objects.get(codename="add_environment"))
    client = client_for(stranger)

    answer = client.post("/v1/environments", {"name": "team-a"}, format="json")

    assert answer.status_code == 201, answer.json()
    env = Environment.objects.get(name="team-a")
    assert {e["name"] for e in client.get("/v1/environments").json()["environments"]} == {"team-a"}
    for action in Action:
        assert stranger.has_perm(action.value, env), action
    grants = AuditRecord.objects.filter(object_type="permission", environment=env)
    assert grants.count() == len(Action)


def test_a_user_without_the_permission_gets_403_and_nothing_is_made(owner: Any) -> None:
    answer = client_for(owner).post("/v1/environments", {"name": "staging"}, format="json")

    assert answer.status_code == 403
    assert "agents.add_environment" in answer.json()["detail"]
    assert not Environment.objects.filter(name="staging").exists()


def test_a_taken_name_in_any_case_is_409_and_leaves_no_record(admin_user: Any, env: Any) -> None:
    before = AuditRecord.objects.count()

    answer = client_for(admin_user).post(
        "/v1/environments", {"name": env.name.upper()}, format="json"
    )

    assert answer.status_code == 409
    assert answer.json() == {"detail": f"Environment '{env.name.upper()}' already exists."}
    assert AuditRecord.objects.count() == before


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({}, ["body", "name"]),
        ({"name": "has space"}, ["body", "name"]),
        ({"name": "x" * 101}, ["body", "name"]),
        ({"name": "4d2c3a0e-52d5-4a47-9d5b-3f8d1b0b7c11"}, ["body", "name"]),
        ({"name": "ok", "description": "d" * 201}, ["body", "description"]),
    ],
    ids=["missing", "space", "long", "uuid", "long-description"],
)
def test_a_bad_environment_is_refused_at_its_field(
    admin_user: Any, body: dict[str, Any], loc: list[str]
) -> None:
    count = Environment.objects.count()

    answer = client_for(admin_user).post("/v1/environments", body, format="json")

    assert answer.status_code == 400
    assert [e["loc"] for e in answer.json()["detail"]] == [loc]
    assert Environment.objects.count() == count
