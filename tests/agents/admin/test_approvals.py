"""The approvals inbox (agents/admin/approvals.py): the calls a staff user may decide, across
agents, with their arguments and the run's conversation; a decision there resumes the run
in the server's runner. The runs pause through the native API on a fake OpenAI model
(tests/support/admin.py's `failing_openai`, whose settings the runner in this process
reads); transactional, so the runner's own database connection sees them."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.access.permissions import Action, grant
from agents.models import Agent, ApprovalRequest, Run
from tests.browser import BROWSER, Page, browser_server, chrome, page  # noqa: F401 (fixtures)
from tests.conftest import client_for
from tests.factories import UserFactory
from tests.fakes.openai import FakeOpenAI
from tests.fakes.server import Call, Turn
from tests.support.admin import REMOTE_CALCULATOR, failing_openai  # noqa: F401 (fixture)
from tests.support.native import invoke

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]
ASK = {"messages": [{"role": "user", "content": "What is 3x5?"}]}
PATIENCE = 120.0  # seconds a loaded machine may take for the runner to end a quick run


@pytest.fixture
def gated(make_agent: Any) -> Agent:
    tools = [
        {**t, "requireApproval": "always"} if t.get("funcName") == "multiply" else t
        for t in REMOTE_CALCULATOR["tools"]
    ]
    return make_agent("gated", "tool", config={**REMOTE_CALCULATOR, "tools": tools})


def staff(name: str) -> Any:
    return UserFactory(username=name, is_staff=True)


def admin_as(user: Any) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def paused(owner: Any, agent: Agent) -> ApprovalRequest:
    answer = invoke(client_for(owner), agent, "invoke", ASK)
    assert answer.body["status"] == "awaiting_approval", answer.body
    return ApprovalRequest.objects.get(run_id=answer.run_id)


def ended(run_id: Any) -> Run:
    deadline = time.monotonic() + PATIENCE
    while (run := Run.objects.get(pk=run_id)).status in ("in_progress", "awaiting_approval"):
        assert time.monotonic() < deadline, "the resumed run did not end"
        time.sleep(0.05)
    return run


INBOX = reverse("admin:agents_approvalrequest_changelist")


def page_of(asked: ApprovalRequest) -> str:
    return reverse("admin:agents_approvalrequest_change", args=[asked.pk])


def test_the_inbox_lists_what_each_user_may_decide_and_shows_it_whole(
    failing_openai: FakeOpenAI,  # noqa: F811
    owner: Any,
    gated: Agent,
) -> None:
    failing_openai.script(Turn(calls=[Call("multiply", {"a": 3, "b": 5})]))
    asked = paused(owner, gated)
    approver, bystander = staff("approver"), staff("bystander")
    grant(approver, Action.APPROVE, gated)
    grant(bystander, Action.AUDIT, gated)  # reads the run, decides nothing

    listed = admin_as(approver).get(INBOX)
    assert listed.status_code == 200
    assert page_of(asked) in listed.content.decode()
    assert page_of(asked) not in admin_as(bystander).get(INBOX).content.decode()
    assert admin_as(bystander).get(page_of(asked)).status_code == 302  # not theirs: away
    shown = admin_as(approver).get(page_of(asked)).content.decode()
    assert "What is 3x5?" in shown  # the conversation so far
    assert "&quot;a&quot;: 3" in shown
    assert "multiply" in shown
    assert 'name="decision" value="approve"' in shown


def test_approving_in_the_inbox_resumes_the_run_in_the_server(
    failing_openai: FakeOpenAI,  # noqa: F811
    owner: Any,
    gated: Agent,
) -> None:
    failing_openai.script(
        Turn(calls=[Call("multiply", {"a": 3, "b": 5}, id="call_m")]), Turn(text=["It is 15."])
    )
    asked = paused(owner, gated)
    approver = staff("approver")
    grant(approver, Action.APPROVE, gated)

    grant(approver, Action.AUDIT, gated)  # reads the run too: its page follows the decision
    decided = admin_as(approver).post(page_of(asked), {"decision": "approve", "message": "ok"})

    assert decided.status_code == 302
    assert decided["Location"] == reverse("admin:agents_run_change", args=[asked.run_id])
    run = ended(asked.run_id)
    assert (run.status, run.output) == ("completed", "It is 15.")
    decision = [s for s in run.steps if s["type"] == "approval_decision"]
    assert [(d["decision"], d["by"], d["message"]) for d in decision] == [
        ("approve", "approver", "ok")
    ]
    assert page_of(asked) not in admin_as(approver).get(INBOX).content.decode()
    again = admin_as(approver).post(page_of(asked), {"decision": "reject"}, follow=True)
    assert "Nothing to decide here." in again.content.decode()  # it left the inbox


def test_the_callers_rejection_in_the_inbox_tells_the_model_its_message(
    failing_openai: FakeOpenAI,  # noqa: F811
    owner: Any,
    gated: Agent,
) -> None:
    failing_openai.script(
        Turn(calls=[Call("multiply", {"a": 3, "b": 5}, id="call_m")]),
        Turn(text=["I may not multiply."]),
    )
    asked = paused(owner, gated)
    owner.is_staff = True  # the run's own caller decides it, in the admin too
    owner.save()
    admin_as(owner).post(page_of(asked), {"decision": "reject", "message": "Not today."})
    run = ended(asked.run_id)
    assert run.status == "completed"
    told = [m for m in failing_openai.bodies[1]["messages"] if m["role"] == "tool"][-1]
    assert "Not today." in told["content"]
    assert ApprovalRequest.objects.get(pk=asked.pk).status == "rejected"


@BROWSER
def test_an_approver_finds_the_call_in_the_inbox_and_approves_it_in_chromium(
    page: Page,  # noqa: F811
    failing_openai: FakeOpenAI,  # noqa: F811
    owner: Any,
    gated: Agent,
) -> None:
    failing_openai.script(
        Turn(calls=[Call("multiply", {"a": 3, "b": 5}, id="call_m")]), Turn(text=["It is 15."])
    )
    asked = paused(owner, gated)
    approver = staff("approver")
    grant(approver, Action.APPROVE, gated)
    page.login(approver)
    page.open(INBOX)
    page.find(f'a[href="{page_of(asked)}"]').click()
    page.wait_for(".approval-arguments", text='"a": 3')
    assert "What is 3x5?" in page.find(".approval-conversation").text
    page.find("#approval-message").send_keys("Fine by me.")
    page.shot("approval-inbox")
    page.find("#approval-approve").click()

    page.wait_for(".messagelist", text="Approved. The run goes on.")
    assert page.path == INBOX  # APPROVE alone reads no run: back to the list, now empty
    assert not page.find_all(f'a[href="{page_of(asked)}"]')
    run = ended(asked.run_id)
    assert (run.status, run.output) == ("completed", "It is 15.")
    assert run.steps[-3]["type"] == "approval_decision"
    assert run.steps[-3]["message"] == "Fine by me."
