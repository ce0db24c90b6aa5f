"""An agent's aliases in the admin (agents/admin/aliases.py): promote, roll back, delete,
and the history, through the same services as the API."""

from __future__ import annotations

from typing import Any

from django.test import Client
from django.urls import reverse

from agents.access.permissions import Action, grant
from agents.models import AliasChange, Run, VersionAlias
from agents.services.aliases import alias_set
from tests.factories import UserFactory
from tests.support.admin import post, url


def pointed(agent: Any, name: str) -> int:
    return VersionAlias.objects.get(agent=agent, name__iexact=name).version.number


def test_promote_then_roll_back_and_every_change_is_in_the_history(
    client: Client, admin_user: Any, calc: Any
) -> None:
    client.force_login(admin_user)

    post(client, calc, action="promote", name="prod", version=2)
    assert pointed(calc, "prod") == 2
    page = post(client, calc, action="promote", name="prod", version=3)
    assert pointed(calc, "prod") == 3
    assert "Roll back to v2" in page.content.decode()

    post(client, calc, action="rollback", name="prod")
    assert pointed(calc, "prod") == 2

    changes = [
        (c.from_version.number if c.from_version else None, c.to_version.number)
        for c in AliasChange.objects.filter(agent=calc).order_by("changed_at", "id")
    ]
    assert changes == [(None, 2), (2, 3), (3, 2)]
    history = client.get(url(calc)).content.decode()
    assert history.count("<td>prod</td>") == 3
    assert "root" in history  # who changed it


def test_the_alias_resolves_for_callers_once_promoted(
    client: Client, admin_user: Any, calc: Any, owner_client: Any
) -> None:
    client.force_login(admin_user)
    post(client, calc, action="promote", name="prod", version=1)

    answer = owner_client.post(
        f"/v1/agents/{calc.pk}/versions/prod/invoke",
        {"messages": [{"role": "user", "content": "What is 3x5?"}]},
        format="json",
    )

    assert answer.status_code == 200
    assert Run.objects.get(pk=answer.headers["X-Run-Id"]).version.number == 1


def test_a_bad_name_or_reserved_name_is_a_form_error(
    client: Client, admin_user: Any, calc: Any
) -> None:
    client.force_login(admin_user)

    for name in ("latest", "9lives", "has space"):
        page = post(client, calc, action="promote", name=name, version=1)
        assert page.context["form"].errors["name"], name
    assert not VersionAlias.objects.exists()


def test_a_fresh_alias_cannot_roll_back_and_delete_removes_it(
    client: Client, admin_user: Any, calc: Any
) -> None:
    client.force_login(admin_user)
    post(client, calc, action="promote", name="staging", version=3)

    page = post(client, calc, action="rollback", name="staging")
    assert "no earlier version" in page.content.decode()
    assert pointed(calc, "staging") == 3
    post(client, calc, action="delete", name="staging")
    assert not VersionAlias.objects.filter(agent=calc).exists()
    assert AliasChange.objects.filter(agent=calc, to_version=None).count() == 1


def test_readers_see_the_aliases_and_only_editors_change_them(
    client: Client, env: Any, calc: Any, admin_user: Any
) -> None:
    alias_set(user=admin_user, agent=calc, name="prod", version_number=2)
    reader = UserFactory(username="reader", is_staff=True)
    grant(reader, Action.READ, env)
    client.force_login(reader)

    page = client.get(url(calc)).content.decode()
    assert 'data-alias="prod"' in page
    assert "promote-form" not in page
    assert (
        client.post(url(calc), {"action": "promote", "name": "prod", "version": 3}).status_code
        == 404
    )
    assert pointed(calc, "prod") == 2
    stranger = UserFactory(username="nobody", is_staff=True)
    client.force_login(stranger)
    assert client.get(url(calc)).status_code == 404


def test_each_version_of_the_history_links_to_promote_it(
    client: Client, admin_user: Any, calc: Any
) -> None:
    client.force_login(admin_user)

    page = client.get(reverse("admin:agents_agent_change", args=[calc.pk])).content.decode()
    assert f'{url(calc)}?version=3">Promote to…' in page
    promote = client.get(url(calc), {"version": "3"})
    assert promote.context["form"]["version"].value() == "3"
