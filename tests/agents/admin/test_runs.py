from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client

from agents.access.permissions import Action, grant
from agents.examples import CALCULATOR
from agents.models import Run
from tests.factories import UserFactory
from tests.support.guardrails import ATTACK


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


def _invoke(client: Any, agent: Any, text: str, thread: str = "") -> Run:
    body: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
    if thread:
        body["threadId"] = thread
    answer = client.post(f"/v1/agents/{agent.pk}/versions/latest/invoke", body, format="json")
    assert answer.status_code == 200, answer.content
    return Run.objects.get(pk=answer.headers["X-Run-Id"])


def _staff(username: str, env: Any, *actions: Action) -> Any:
    user = UserFactory(username=username, is_staff=True)
    for action in actions:
        grant(user, action, env)
    return user


def _signed_in(user: Any) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def test_the_list_shows_agent_version_caller_status_latency_tokens_cost_and_start(
    admin_user: Any, owner: Any, owner_client: Any, make_agent: Any
) -> None:
    run = _invoke(owner_client, make_agent(), "What is 3x5?")

    listing = _signed_in(admin_user).get("/admin/agents/run/")
    cells = listing.context["cl"].result_list
    assert list(cells) == [run]
    row = html.unescape(listing.content.decode())
    headers = [h["text"] for h in listing.context["result_headers"]]
    assert headers[-10:] == [
        "started at",
        "agent",
        "version",
        "caller",
        "protocol",
        "status",
        "latency",
        "tokens",
        "cost",
        "input",
    ]
    assert f"{run.latency_ms} ms" in row
    assert ">owner<" in row
    assert f">{run.tokens_usage['total_tokens']}<" in row
    assert '<td class="field-cost">$0</td>' in row  # the offline model is free


@pytest.mark.parametrize(
    "query",
    [
        {"status__exact": "completed"},
        {"protocol": "native"},
        {"started_at__gte": "2000-01-01 00:00:00+00:00"},
    ],
)
def test_the_list_filters_by_agent_caller_protocol_status_and_date(
    admin_user: Any, owner: Any, owner_client: Any, make_agent: Any, query: dict[str, str]
) -> None:
    calc, other = make_agent(), make_agent("other")
    mine = _invoke(owner_client, calc, "What is 3x5?")
    _invoke(owner_client, other, "What is 2x2?")
    site = _signed_in(admin_user)

    by_agent = site.get("/admin/agents/run/", {"agent__id__exact": str(calc.pk), **query})
    assert list(by_agent.context["cl"].result_list) == [mine]
    by_caller = site.get("/admin/agents/run/", {"caller__id__exact": owner.pk, **query})
    assert len(by_caller.context["cl"].result_list) == 2
    nobody = site.get("/admin/agents/run/", {"caller__id__exact": admin_user.pk, **query})
    assert list(nobody.context["cl"].result_list) == []


def test_staff_see_their_own_runs_and_with_audit_everyone_s(
    env: Any, make_agent: Any, as_user: Any
) -> None:
    agent = make_agent()
    alice = _staff("alice", env, Action.READ, Action.INVOKE)
    bob = _staff("bob", env, Action.READ, Action.INVOKE)
    auditor = _staff("auditor", env, Action.READ, Action.AUDIT)
    alices = _invoke(as_user(alice), agent, "What is 3x5?")
    bobs = _invoke(as_user(bob), agent, "What is 2x2?")

    def listed(user: Any) -> set[Any]:
        return set(_signed_in(user).get("/admin/agents/run/").context["cl"].result_list)

    assert listed(alice) == {alices}
    assert listed(bob) == {bobs}
    assert listed(auditor) == {alices, bobs}
    assert _signed_in(alice).get(f"/admin/agents/run/{bobs.pk}/change/").status_code == 302
    assert _signed_in(auditor).get(f"/admin/agents/run/{bobs.pk}/change/").status_code == 200


def test_the_run_page_links_its_thread_and_the_thread_link_lists_its_turns(
    admin_user: Any, owner_client: Any, make_agent: Any
) -> None:
    agent = make_agent()
    first = _invoke(owner_client, agent, "What is 3x5?", thread="t-9")
    second = _invoke(owner_client, agent, "And 2x2?", thread="t-9")
    _invoke(owner_client, agent, "What is 4x4?", thread="t-other")
    site = _signed_in(admin_user)

    page = html.unescape(site.get(f"/admin/agents/run/{second.pk}/change/").content.decode())
    assert "t-9 (2 turns)" in page
    listed = r'<a href="(/admin/agents/run/\?[^"]*thread_id=t-9[^"]*)" id="run-thread-runs">'
    link = re.search(listed, page)
    assert link is not None, page
    thread = site.get(link.group(1))
    assert set(thread.context["cl"].result_list) == {first, second}


def test_the_run_page_links_its_trace_where_a_trace_viewer_is_set(
    admin_user: Any, owner_client: Any, make_agent: Any, settings: Any
) -> None:
    run = _invoke(owner_client, make_agent(), "What is 3x5?")
    site = _signed_in(admin_user)
    assert re.fullmatch(r"[0-9a-f]{32}", run.trace_id)

    plain = site.get(f"/admin/agents/run/{run.pk}/change/").content.decode()
    settings.OTEL_TRACE_URL_TEMPLATE = "http://127.0.0.1:16686/trace/{trace_id}"
    linked = site.get(f"/admin/agents/run/{run.pk}/change/").content.decode()

    assert run.trace_id in plain
    assert 'id="run-trace-link"' not in plain
    expected = f'<a href="http://127.0.0.1:16686/trace/{run.trace_id}" id="run-trace-link">'
    assert expected in linked
    # Found by its trace id, as a collector shows it.
    listed = site.get("/admin/agents/run/", {"q": run.trace_id})
    assert list(listed.context["cl"].result_list) == [run]


def test_the_run_page_shows_its_steps_as_a_timeline_above_the_messages(
    admin_user: Any, owner_client: Any, make_agent: Any
) -> None:
    run = _invoke(owner_client, make_agent(), "What is 3x5?")

    page = _signed_in(admin_user).get(f"/admin/agents/run/{run.pk}/change/").content.decode()

    kinds = re.findall(r'<details class="run-step [^"]*" data-type="([a-z_]+)"', page)
    assert kinds == ["model_call", "tool_call", "model_call"]
    widths = [float(w) for w in re.findall(r"width: ([0-9.]+)%", page)]
    assert len(widths) == 3
    assert all(0 < w <= 100 for w in widths)
    assert page.index('id="run-conversation"') < page.index("run-timeline")
    assert "agents/runs.css" in page


def test_the_run_page_shows_what_a_guardrail_block_found(
    admin_user: Any, owner_client: Any, make_agent: Any
) -> None:
    config = {**CALCULATOR["config"], "guardrails": ["HAIP-Prompt_attack-Medium"]}
    run = _invoke(owner_client, make_agent(config=config), ATTACK)

    page = _signed_in(admin_user).get(f"/admin/agents/run/{run.pk}/change/").content.decode()

    # Open, so the notice shows without a click.
    assert re.search(r'<details class="run-step run-step-guardrail [^"]*"[^>]* open>', page)
    notice = re.search(r'<div class="run-guardrail-notice">(.*?)</div>', page, re.S)
    assert notice is not None
    text = " ".join(re.sub(r"<[^>]+>", " ", html.unescape(notice.group(1))).split())
    assert text == (
        "BLOCKED by HAIP-Prompt_attack-Medium at the input stage. "
        "Detected: instruction override · score 1.00 · detector: rules "
        "Ignore all previous instructions"
    )
    assert "<mark>Ignore all previous instructions</mark>" in notice.group(1)
