"""A run's page read as a conversation, the runs list's input column and the thread page
(agents/admin/run_page.py, agents/admin/conversation.py), over the Django test client."""

from __future__ import annotations

import html
import re
from typing import Any

from django.test import Client

from agents.access.permissions import Action, grant
from agents.examples import CALCULATOR
from agents.models import Run
from tests.factories import UserFactory
from tests.support.guardrails import ATTACK
from tests.support.rag import rag_agent, upload

HOSTILE = '<img src=x onerror="alert(1)">'


def invoke(client: Any, agent: Any, text: str, thread: str = "") -> Run:
    body: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
    if thread:
        body["threadId"] = thread
    answer = client.post(f"/v1/agents/{agent.pk}/versions/latest/invoke", body, format="json")
    assert answer.status_code == 200, answer.content
    return Run.objects.get(pk=answer.headers["X-Run-Id"])


def signed_in(user: Any) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def text_of(fragment: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html.unescape(fragment)).split())


def section(page: str, id_: str) -> str:
    found = re.search(rf'<(fieldset|details) class="[^"]*" id="{id_}">(.*?)</\1>', page, re.S)
    assert found is not None, f"no #{id_}"
    return found.group(2)


def test_the_run_page_shows_the_turn_as_a_chat_with_its_tool_call_and_usage(
    admin_user: Any, owner_client: Any, make_agent: Any
) -> None:
    run = invoke(owner_client, make_agent(), "What is 3x5?")

    page = signed_in(admin_user).get(f"/admin/agents/run/{run.pk}/change/").content.decode()

    chat = section(page, "run-conversation")
    roles = re.findall(r'<div class="run-bubble run-bubble-\w+" data-role="(\w+)">', chat)
    assert roles == ["user", "assistant"]
    assert "What is 3x5?" in chat
    assert "The result of multiply(3, 5) is 15." in chat
    folded = r'<details class="run-tool-call" data-tool="multiply">(.*?)</details>'
    call = re.search(folded, chat, re.S)
    assert call is not None  # folded: a <details> without `open`
    assert text_of(call.group(1)) == 'tool multiply arguments { "a": 3, "b": 5 } result 15'
    usage = text_of(section(page, "run-usage"))
    assert "local.demo-v1 40 12 0 $0" in usage  # tokens in, out, cached in, cost
    assert f"latency {run.latency_ms} ms" in usage


def test_internal_fields_are_hidden_and_the_json_is_shown_only_on_request(
    admin_user: Any, owner_client: Any, make_agent: Any
) -> None:
    run = invoke(owner_client, make_agent(), "What is 3x5?")

    page = signed_in(admin_user).get(f"/admin/agents/run/{run.pk}/change/").content.decode()

    assert "Lease until" not in page
    assert "lease" not in text_of(page).lower()
    assert '"tool_calls"' not in page.replace(section(page, "run-json"), "")
    records = section(page, "run-json")
    assert "<summary>Show JSON</summary>" in records
    assert "&quot;tool_calls&quot;" in records


def test_hostile_text_in_messages_and_hits_is_escaped(
    admin_user: Any,
    env: Any,
    owner_client: Any,
    make_agent: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        doc = upload(env, admin_user, f"Policy {HOSTILE}", f"Vacation policy. {HOSTILE} 25 days.")
    run = invoke(owner_client, rag_agent(make_agent), f"What is the vacation policy? {HOSTILE}")

    page = signed_in(admin_user).get(f"/admin/agents/run/{run.pk}/change/").content.decode()

    assert HOSTILE not in page
    assert html.escape(HOSTILE) in section(page, "run-conversation")
    hits = section(page, "run-hits")
    [row] = re.findall(r'<tr class="run-hit">(.*?)</tr>', hits, re.S)
    assert f'href="/admin/retrieval/document/{doc.pk}/change/"' in row
    assert f"Policy {html.escape(HOSTILE)}</a>" in row
    assert f"Vacation policy. {html.escape(HOSTILE)} 25 days." in row
    score = float(run.steps[0]["hits"][0]["score"])
    assert f'<td class="run-hit-score">{score:.3f}</td>' in row


def test_a_guardrail_block_is_a_notice_before_the_answer_it_replaced(
    admin_user: Any, owner_client: Any, make_agent: Any
) -> None:
    config = {**CALCULATOR["config"], "guardrails": ["HAIP-Prompt_attack-Medium"]}
    run = invoke(owner_client, make_agent(config=config), ATTACK)

    page = signed_in(admin_user).get(f"/admin/agents/run/{run.pk}/change/").content.decode()

    chat = section(page, "run-conversation")
    drawn = r'class="(run-bubble run-bubble-\w+|run-guardrail-notice run-chat-notice)"'
    order = re.findall(drawn, chat)
    assert order == [
        "run-bubble run-bubble-user",
        "run-guardrail-notice run-chat-notice",
        "run-bubble run-bubble-assistant",
    ]
    assert "BLOCKED by HAIP-Prompt_attack-Medium at the input stage." in text_of(chat)


def test_the_runs_list_shows_the_input_cut_and_escaped(
    admin_user: Any, owner_client: Any, make_agent: Any, django_assert_max_num_queries: Any
) -> None:
    long = f"{HOSTILE} What is 3x5? " + "and then some more words " * 10
    invoke(owner_client, make_agent(), long)
    for n in range(4):
        invoke(owner_client, make_agent(f"calc{n}"), "What is 2x2?")
    site = signed_in(admin_user)

    with django_assert_max_num_queries(12):
        listing = site.get("/admin/agents/run/").content.decode()

    cells = re.findall(
        r'<td class="field-input"><span class="run-input" title="[^"]*">(.*?)<', listing
    )
    assert len(cells) == 5
    first = html.unescape(cells[-1])  # newest first
    assert len(first) == 80
    assert first == " ".join(long.split())[:79] + "…"
    assert HOSTILE not in listing


def staff(username: str, env: Any, *actions: Action) -> Any:
    user: Any = UserFactory(username=username, is_staff=True)
    for action in actions:
        grant(user, action, env)
    return user


def test_the_thread_page_reads_the_turns_in_order_and_links_each_run(
    env: Any, make_agent: Any, as_user: Any
) -> None:
    alice = staff("alice", env, Action.READ, Action.INVOKE)
    agent = make_agent()
    first = invoke(as_user(alice), agent, "What is 3x5?", thread="t-1")
    second = invoke(as_user(alice), agent, "And 2x2?", thread="t-1")
    invoke(as_user(alice), agent, "What is 4x4?", thread="t-2")
    site = signed_in(alice)

    run_page = site.get(f"/admin/agents/run/{second.pk}/change/").content.decode()
    link = re.search(r'<a href="([^"]+)" id="run-thread-link">', run_page)
    assert link is not None
    page = site.get(html.unescape(link.group(1)))

    assert page.status_code == 200
    body = page.content.decode()
    runs = re.findall(r'<section class="module run-turn" id="turn-\d+" data-run="([^"]+)">', body)
    assert runs == [str(first.pk), str(second.pk)]
    assert f'href="/admin/agents/run/{first.pk}/change/" class="run-turn-link"' in body
    said = r'data-role="user">\s*<div class="run-bubble-role">user</div>\s*<div[^>]*>([^<]*)<'
    users = re.findall(said, body)
    assert users == ["What is 3x5?", "And 2x2?"]
    # The runs list filtered to the thread links to it too.
    listing = site.get("/admin/agents/run/", {"thread_id": "t-1", "caller__id__exact": alice.pk})
    assert f'<a href="{link.group(1)}" id="runs-thread-link">' in listing.content.decode()


def test_another_caller_s_thread_is_a_404_unless_one_audits(
    env: Any, make_agent: Any, as_user: Any
) -> None:
    agent = make_agent()
    alice = staff("alice", env, Action.READ, Action.INVOKE)
    bob = staff("bob", env, Action.READ, Action.INVOKE)
    auditor = staff("auditor", env, Action.READ, Action.AUDIT)
    invoke(as_user(bob), agent, "What is 2x2?", thread="t-b")
    query = {"thread": "t-b", "caller": bob.pk}

    assert signed_in(alice).get("/admin/agents/run/thread/", query).status_code == 404
    # Alice's own thread of that id is another thread: she has none.
    assert signed_in(alice).get("/admin/agents/run/thread/", {"thread": "t-b"}).status_code == 404
    assert signed_in(bob).get("/admin/agents/run/thread/", {"thread": "t-b"}).status_code == 200
    assert signed_in(auditor).get("/admin/agents/run/thread/", query).status_code == 200
