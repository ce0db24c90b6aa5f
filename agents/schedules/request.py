"""What a schedule runs: its input, checked against the agent when the schedule is saved,
and the run request each tick makes of it.

The input is a native invoke body (agents.protocols.native.request): `{"messages": [...]}`
(with the chat body's other fields) for tool and RAG agents, `{"inputs": {...}}` for task
agents; it is checked as the invoke routes check it, its errors located under the input.
"""

from __future__ import annotations

import uuid
from typing import Any

from agentbuilder.errors import ErrorItem, Invalid, Loc, NotFound
from agentbuilder.users import User
from agentbuilder.wire import parse
from agents.configs import TaskAgentConfig, config_parse
from agents.models import Agent, AgentVersion, Environment
from agents.protocols.native.request import InvokeRequest, InvokeTaskRequest, runtime_messages
from agents.runs.request import CHAT_TYPES, TASK_TYPES, RunRequest
from agents.runtime.task_agent import TaskInputError, prepare_inputs
from agents.selectors.versions import version_get
from agents.templating import TemplateLimitError
from agents.webhooks.guard import webhook_check
from agents.webhooks.request import WebhookBody
from guardrails.selectors import unknown_guardrail_names
from retrieval.rag import OVERRIDES as RAG_OVERRIDES

PROTOCOL = "schedule"  # as a schedule's runs name their protocol
# Fields of the invoke body a schedule's input leaves out: its runs are background runs
# always, and its webhook is the schedule's own.
NOT_IN_INPUT = {
    "background": "a schedule's runs are background runs",
    "webhook": "set the schedule's `webhook` instead",
}


def version_check(*, agent: Agent, version: str, loc: Loc = ("body", "version")) -> AgentVersion:
    """The version `version` names now (`latest`, a number, an id, an alias). Raises
    Invalid at `loc`: a schedule names a version that exists when it is saved."""
    try:
        return version_get(agent=agent, ref=version)
    except Invalid as exc:
        raise Invalid([ErrorItem(loc, e.msg, e.type) for e in exc.errors]) from None
    except NotFound as exc:
        raise Invalid.at(loc, exc.detail) from None


def input_check(
    *, agent: Agent, version: AgentVersion, data: Any, loc: Loc = ("body", "input")
) -> dict[str, Any]:
    """`data` as a native invoke body of `agent`'s type, checked against `version` (a task
    agent's inputs against its inputSchema and template) and the environment's guardrails;
    returned as stored. Raises Invalid under `loc`."""
    if isinstance(data, dict):
        for name, why in NOT_IN_INPUT.items():
            if name in data:
                raise Invalid.at((*loc, name), why)
    if agent.agent_type in TASK_TYPES:
        task = parse(InvokeTaskRequest, data, *loc)
        _task_inputs_check(version, task.inputs, (*loc, "inputs"))
        body: InvokeRequest | InvokeTaskRequest = task
    else:
        chat = parse(InvokeRequest, data, *loc)
        _messages(chat, loc)
        body = chat
    unknown = unknown_guardrail_names(names=body.guardrails, environment_id=agent.environment_id)
    if unknown:
        at = (*loc, "guardrails")
        raise Invalid(
            [
                ErrorItem((*at, body.guardrails.index(n)), f"unknown guardrail '{n}'")
                for n in unknown
            ]
        )
    return body.model_dump(mode="json", by_alias=True, exclude_unset=True)


def _task_inputs_check(version: AgentVersion, inputs: dict[str, Any], loc: Loc) -> None:
    config = config_parse(TASK_TYPES[0], version.config)
    assert isinstance(config, TaskAgentConfig)
    try:
        prepare_inputs(config, inputs)
    except TaskInputError as exc:
        raise Invalid([ErrorItem((*loc, *path), msg) for path, msg in exc.problems]) from None
    except TemplateLimitError as exc:
        raise Invalid.at(loc, f"the prompt template went over a limit: {exc}") from None


def _messages(chat: InvokeRequest, loc: Loc) -> None:
    try:
        runtime_messages(chat)
    except Invalid as exc:  # located as the invoke routes' body: ["body", "messages", ...]
        raise Invalid([ErrorItem((*loc, *e.loc[1:]), e.msg, e.type) for e in exc.errors]) from None


def webhook_stored(data: Any, loc: Loc = ("body", "webhook")) -> dict[str, Any] | None:
    """A schedule's webhook as stored (None: none), checked as a request's webhook is.
    Raises Invalid under `loc`."""
    if data is None:
        return None
    webhook = data if isinstance(data, WebhookBody) else parse(WebhookBody, data, *loc)
    webhook_check(webhook, loc)
    return webhook.stored()


def run_request(
    *,
    owner: User,
    environment: Environment,
    agent_id: uuid.UUID,
    agent_type: str,
    version: str,
    stored: dict[str, Any],
    schedule_id: uuid.UUID,
    webhook: dict[str, Any] | None = None,
) -> RunRequest:
    """The background run a tick of schedule `schedule_id` asks for, as its owner."""
    fields: dict[str, Any] = {}
    agent_types: tuple[str, ...]
    if agent_type in TASK_TYPES:
        task = InvokeTaskRequest.model_validate(stored)
        agent_types, fields["inputs"] = TASK_TYPES, task.inputs
        guardrails = task.guardrails
    else:
        chat = InvokeRequest.model_validate(stored)
        agent_types, guardrails = CHAT_TYPES, chat.guardrails
        fields["messages"] = runtime_messages(chat)
        fields["thread_id"] = chat.thread_id or ""
        # Field names, not the wire's camelCase: retrieval.rag.OVERRIDES names them so.
        fields["rag_overrides"] = chat.model_dump(
            include=set(RAG_OVERRIDES), exclude_none=True, by_alias=False
        )
    return RunRequest(
        user=owner,
        environment=environment,
        agent_id=agent_id,
        version_ref=version,
        protocol=PROTOCOL,
        route="schedule",
        agent_types=agent_types,
        guardrails=tuple(guardrails),
        schedule_id=schedule_id,
        webhook=None if webhook is None else WebhookBody.model_validate(webhook),
        **fields,
    )
