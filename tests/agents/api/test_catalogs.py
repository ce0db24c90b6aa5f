"""The model catalog's prices over the API (docs/api.md#catalogs): who may set them, what
is refused at which path, and that a change prices the next run."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission

from agents.models import LLMModel
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
