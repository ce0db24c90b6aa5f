from __future__ import annotations

from django.test import Client

from agents.models import Run


def test_runs_are_listed_and_shown_read_only_in_the_admin(admin_user, owner_client, make_agent):
    agent = make_agent()
    answer = owner_client.post(
        f"/v1/agents/{agent.pk}/versions/latest/invoke",
        {"messages": [{"role": "user", "content": "What is 3x5?"}]},
        format="json",
    )
    run = Run.objects.get(pk=answer.headers["X-Run-Id"])
    browser = Client()
    browser.force_login(admin_user)

    listing = browser.get("/admin/agents/run/", {"status__exact": "completed"})
    assert listing.status_code == 200
    assert str(run.pk) in listing.content.decode()

    page = browser.get(f"/admin/agents/run/{run.pk}/change/")
    assert page.status_code == 200
    assert "multiply" in page.content.decode()  # the turn's tool call is shown
    assert b'name="_save"' not in page.content  # nothing to save: runs are records
    assert browser.post(f"/admin/agents/run/{run.pk}/delete/").status_code == 403
