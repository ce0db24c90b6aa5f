from __future__ import annotations

from guardrails.models import Guardrail
from tests.conftest import client_for


def names(client, **headers) -> list[tuple[str, str]]:
    body = client.get("/v1/guardrails", **headers).json()
    return [(g["name"], g["description"]) for g in body["guardrails"]]


def test_each_environment_lists_the_global_guardrails_and_its_own(owner, other_env, admin_user):
    Guardrail.objects.create(name="Team-Only", description="ours", environment=other_env)
    Guardrail.objects.create(
        name="HAIP-Profanity", description="stricter here", environment=other_env
    )
    Guardrail.objects.create(name="Off", description="disabled", enabled=False)

    default = names(client_for(owner))
    assert ("HAIP-Profanity", "Filters profane language from inputs and outputs") in default
    assert all(name not in ("Team-Only", "Off") for name, _ in default)
    assert len(default) == 5

    other = names(client_for(admin_user), HTTP_X_ENVIRONMENT="other")
    assert ("Team-Only", "ours") in other
    assert ("HAIP-Profanity", "stricter here") in other  # its own row wins over the global
    assert len(other) == 6


def test_the_guardrail_list_is_paginated(owner):
    body = client_for(owner).get("/v1/guardrails", {"limit": 2, "offset": 1}).json()
    assert [g["name"] for g in body["guardrails"]] == ["HAIP-Insults-High", "HAIP-Insults-Low"]
    assert body["pagination"] == {"totalItems": 5, "offset": 1, "limit": 2, "hasMore": True}
