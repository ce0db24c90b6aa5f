"""Invocations: resolve what a run needs from the database, then record what happened.

`invocation_start` does every read (and the run row) before the stream begins, so the
stream itself holds no database connection; `RunRecorder.save` writes once at the end.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from agentbuilder import liveness
from agentbuilder.errors import DomainError, ErrorItem, Invalid
from agents import run_leases, selectors
from agents.configs import (
    McpTool,
    RagAgentConfig,
    RagTool,
    TaskAgentConfig,
    TaskAgentTool,
    ToolAgentConfig,
    config_parse,
)
from agents.llm.base import Message, ToolCallPart
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from agents.llm.registry import provider_for
from agents.mcp.servers import config_server_specs, request_server_specs
from agents.mcp.types import McpServerRequest
from agents.models import Agent, AgentVersion, Environment, LLMModel, Run, RunStatus
from agents.permissions import Action
from agents.rag import retriever, search_request
from agents.runtime.engine import new_response_id
from agents.runtime.events import (
    Event,
    ResponseCompleted,
    ResponseFailed,
)
from agents.runtime.spec import AgentSpec, McpServerSpec, Retriever, RunInput
from agents.runtime.task_agent import TaskInputError, prepare_inputs
from agents.runtime.transcript import Transcript
from agents.templating import TemplateLimitError
from guardrails.engines.rules import Rule
from guardrails.selectors import guardrail_rules, unknown_guardrail_names

logger = logging.getLogger(__name__)

CHAT_TYPES = ("tool", "rag")
TASK_TYPES = ("task",)
# The second sentence of a wrong-route refusal: where this agent type is called instead.
WHERE_TO_CALL = {
    "task": "Call a task agent with POST .../invoke-task (or /invoke-task-stream) and its "
    "`inputs`.",
    "tool": "Call it with POST .../invoke (or /invoke-stream) and `messages`.",
    "rag": "Call it with POST .../invoke (or /invoke-stream) and `messages`.",
}


@dataclass
class Invocation:
    run_id: uuid.UUID
    response_id: str
    spec: AgentSpec
    run_input: RunInput
    # Which agent and version answered, as callers name them (`calculator@3`).
    agent_name: str = ""
    version_number: int = 0

    @property
    def answered_by(self) -> str:
        return f"{self.agent_name}@{self.version_number}"


def invocation_start(
    *,
    user: Any,
    environment: Environment,
    agent_id: uuid.UUID,
    version_ref: str,
    protocol: str,
    route: str,
    agent_types: tuple[str, ...],
    messages: tuple[Message, ...] = (),
    inputs: dict[str, Any] | None = None,
    guardrails: tuple[str, ...] = (),
    thread_id: str = "",
    rag_overrides: dict[str, Any] | None = None,
    max_iterations: int | None = None,
    mcp_servers: Sequence[McpServerRequest] = (),
) -> Invocation:
    """Check the call, open its run and build the runtime spec.

    `mcp_servers`: servers the request names for this run only, on top of the config's.
    Raises NotFound or PermissionDenied before any run exists; after that, DomainError
    (wrong agent type) or Invalid, carrying `run_id`, with the run left `failed`.
    """
    agent = selectors.agent_get(
        user=user, environment=environment, agent_id=agent_id, action=Action.INVOKE
    )
    version = selectors.version_get(agent=agent, ref=version_ref)
    history = thread_history(agent=agent, caller=user, thread_id=thread_id)
    response_id = new_response_id()
    run = Run.objects.create(
        agent=agent,
        version=version,
        caller=user,
        protocol=protocol,
        response_id=response_id,
        thread_id=thread_id,
        messages=[_message_json(m) for m in messages],
        lease_until=liveness.lease_expiry(),
    )
    try:
        if agent.agent_type not in agent_types:
            raise DomainError(
                f"Agent type {agent.agent_type} not supported in {route} endpoints. "
                + WHERE_TO_CALL[agent.agent_type]
            )
        _check_guardrails(guardrails, environment)
        spec = agent_spec(agent=agent, version=version)
        _check_attachments(spec.config.llm_model_id, messages)
        if max_iterations is not None and isinstance(spec.config, ToolAgentConfig):
            # A protocol's own limit (chat completions' iteration_limit) wins for this call.
            config = spec.config.model_copy(update={"max_iterations": max_iterations})
            spec = dataclasses.replace(spec, config=config)
        if mcp_servers:
            spec = _with_request_servers(spec, environment, mcp_servers)
        rules = tuple(_rules([*spec.config.guardrails, *guardrails], environment))
        if isinstance(spec.config, TaskAgentConfig):
            inputs, _ = _task_inputs(spec.config, inputs)
            run_input = RunInput(inputs=inputs, guardrails=rules, guard_window=_window())
            Run.objects.filter(pk=run.pk).update(messages=[{"role": "user", "inputs": inputs}])
        else:
            run_input = RunInput(
                messages=(*history, *messages),
                guardrails=rules,
                guard_window=_window(),
                retrievers=_retrievers(spec, environment, rag_overrides),
            )
    except TemplateOverLimit as exc:
        _fail(run, exc.code, exc.message)
        exc.run_id = run.pk
        raise
    except (Invalid, DomainError) as exc:
        _fail(run, "invalid_request", str(exc))
        exc.run_id = run.pk
        raise
    except BaseException:
        logger.exception("opening run %s failed", run.pk)
        _fail(run, "internal_error", "the run could not be started")
        raise
    invocation = Invocation(run.pk, response_id, spec, run_input, agent.name, version.number)
    run_leases.run_opened(run.pk, invocation)
    return invocation


def _with_request_servers(
    spec: AgentSpec, environment: Environment, requests: Sequence[McpServerRequest]
) -> AgentSpec:
    if not isinstance(spec.config, ToolAgentConfig):
        raise Invalid.at(requests[0].loc[:-1], "only tool agents can use MCP servers")
    extra = request_server_specs(environment=environment, requests=requests)
    return dataclasses.replace(spec, mcp_servers=(*spec.mcp_servers, *extra))


def _check_attachments(model_id: str, messages: tuple[Message, ...]) -> None:
    """Refuse, naming the part, an image or document the model cannot read: the catalog's
    `images` and `documents` capabilities say which can."""
    sent = [a for m in messages for a in m.attachments]
    if not sent:
        return
    served_by = LOCAL_MODEL if settings.LLM_OFFLINE else model_id
    reads = LLMModel.objects.filter(pk=served_by).values_list("capabilities", flat=True).first()
    for attachment in sent:
        if f"{attachment.kind}s" not in (reads or ()):
            raise Invalid.at(
                attachment.loc, f"the model '{served_by}' cannot read {attachment.kind}s"
            )


def _check_guardrails(names: tuple[str, ...], environment: Environment) -> None:
    unknown = unknown_guardrail_names(names=list(names), environment_id=environment.pk)
    if unknown:
        raise Invalid(
            [
                ErrorItem(("body", "guardrails", names.index(n)), f"unknown guardrail '{n}'")
                for n in unknown
            ]
        )


def _rules(names: list[str], environment: Environment) -> list[Rule]:
    try:
        return guardrail_rules(names=names, environment_id=environment.pk)
    except LookupError as exc:
        # A guardrail of the config may have been disabled since: refuse to run without it.
        raise DomainError(f"Guardrail '{exc.args[0]}' of this agent is not available.") from None


def _retrievers(
    spec: AgentSpec, environment: Environment, overrides: dict[str, Any] | None
) -> dict[str, Retriever]:
    config = spec.config
    if isinstance(config, RagAgentConfig):
        template = search_request(config, overrides)
        return {"": retriever(environment_id=environment.pk, template=template)}
    if isinstance(config, ToolAgentConfig):
        return {
            tool.name: retriever(
                environment_id=environment.pk, template=search_request(tool.semantic_search_config)
            )
            for tool in config.tools
            if isinstance(tool, RagTool)
        }
    return {}


def _window() -> int:
    return int(settings.GUARDRAIL_WINDOW_CHARS)


class TemplateOverLimit(DomainError):
    """A task agent's prompt template went over a limit with these inputs: a 400, and the
    run `failed` with this code."""

    code = "template_limit"

    def __init__(self, message: str) -> None:
        super().__init__(f"{self.code}: {message}")
        self.message = message


def _task_inputs(config: TaskAgentConfig, inputs: Any) -> tuple[dict[str, Any], str]:
    try:
        return prepare_inputs(config, inputs if inputs is not None else {})
    except TaskInputError as exc:
        items = [ErrorItem(("body", "inputs", *path), msg) for path, msg in exc.problems]
        raise Invalid(items) from None
    except TemplateLimitError as exc:
        raise TemplateOverLimit(f"the prompt template went over a limit: {exc}") from None


def agent_spec(*, agent: Agent, version: AgentVersion) -> AgentSpec:
    """Everything the runtime needs about a version, task agents behind its tools included."""
    config = config_parse(agent.agent_type, version.config)
    provider_name, model = _model_route(config.llm_model_id)
    task_agents: dict[str, AgentSpec] = {}
    mcp_servers: tuple[McpServerSpec, ...] = ()
    if isinstance(config, ToolAgentConfig):
        for tool in config.tools:
            if isinstance(tool, TaskAgentTool):
                target = _task_target(agent, tool)
                if target is not None:
                    task_agents[tool.name] = agent_spec(agent=target[0], version=target[1])
        mcp = [tool for tool in config.tools if isinstance(tool, McpTool)]
        if mcp:
            mcp_servers = config_server_specs(environment_id=agent.environment_id, tools=mcp)
    return AgentSpec(
        agent_id=str(agent.pk),
        agent_type=agent.agent_type,
        config=config,
        provider=provider_for(provider_name),
        model=model,
        provider_name=provider_name,
        task_agents=task_agents,
        mcp_servers=mcp_servers,
    )


def _model_route(model_id: str) -> tuple[str, str]:
    """(provider, reported model) for a model id; LLM_OFFLINE sends all to the local model."""
    if settings.LLM_OFFLINE:
        return "local", LOCAL_MODEL
    provider = LLMModel.objects.filter(pk=model_id).values_list("provider", flat=True).first()
    return provider or "local", model_id


def _task_target(agent: Agent, tool: TaskAgentTool) -> tuple[Agent, AgentVersion] | None:
    target = Agent.objects.filter(
        pk=tool.agent_id,
        environment_id=agent.environment_id,
        deleted_at__isnull=True,
        agent_type="task",
    ).first()
    if target is None:
        return None
    versions = target.versions.order_by("-number")
    if tool.agent_version != "latest":
        versions = versions.filter(number=tool.agent_version)
    version = versions.first()
    return (target, version) if version is not None else None


def _fail(run: Run, code: str, message: str) -> None:
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.FAILED,
        completed_at=timezone.now(),
        latency_ms=0,
        error={"code": code, "message": message},
        lease_until=None,
    )


def thread_history(*, agent: Agent, caller: Any, thread_id: str) -> tuple[Message, ...]:
    """The messages of the caller's thread's earlier completed turns with this agent, oldest
    first. A thread belongs to its caller: another caller's same id is another thread."""
    if not thread_id:
        return ()
    turns = (
        Run.objects.filter(
            agent=agent, caller=caller, thread_id=thread_id, status=RunStatus.COMPLETED
        )
        .order_by("started_at", "id")
        .values_list("messages", flat=True)
    )
    return tuple(
        message_from_json(m) for turn in turns for m in turn if m.get("role") in MESSAGE_ROLES
    )


MESSAGE_ROLES = ("user", "assistant", "tool")


def _message_json(message: Message) -> dict[str, Any]:
    """A message as run records keep it: OpenAI's shape, which every protocol maps to."""
    data: dict[str, Any] = {"role": message.role, "content": message.text}
    if message.attachments:
        # What was sent, not the bytes: a run record stays small and readable.
        data["attachments"] = [
            {"type": a.kind, "mediaType": a.media_type, "name": a.name, "bytes": len(a.data)}
            for a in message.attachments
        ]
    if message.tool_calls:
        data["tool_calls"] = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in message.tool_calls
        ]
    if message.role == "tool":
        data |= {"tool_call_id": message.tool_call_id, "name": message.name}
    return data


def message_from_json(data: dict[str, Any]) -> Message:
    calls = tuple(
        ToolCallPart(c["id"], c["function"]["name"], c["function"].get("arguments") or "{}")
        for c in data.get("tool_calls") or ()
    )
    content = data.get("content")
    return Message(
        role=data["role"],
        text=content if isinstance(content, str) else json.dumps(content),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
    )


class RunRecorder:
    """Follows a run's events in memory; `save` writes the run record once, at the end."""

    def __init__(self, invocation: Invocation) -> None:
        self.invocation = invocation
        self.transcript = Transcript()
        self.status = RunStatus.IN_PROGRESS
        self.usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        self.output: Any = None
        self.error: dict[str, str] | None = None
        run_leases.run_started(invocation.run_id)

    def observe(self, event: Event) -> None:
        self.transcript.observe(event)
        if isinstance(event, ResponseCompleted):
            self.transcript.close_text()
            self.status = RunStatus.COMPLETED
            self.usage = event.usage.as_dict()
            self.output = event.structured if event.structured is not None else event.text
            if event.custom_outputs:
                self.output = {"answer": self.output, "customOutputs": event.custom_outputs}
        elif isinstance(event, ResponseFailed):
            self.transcript.close_text()
            self.status = RunStatus.FAILED
            self.usage = event.usage.as_dict()
            self.error = {"code": event.code, "message": event.message}

    def broke(
        self, code: str = "internal_error", message: str = "the run failed unexpectedly"
    ) -> ResponseFailed:
        """The run broke where nothing expected it to: its failure, observed (unless it had
        ended already), for the client's stream to end with."""
        event = ResponseFailed(code, message)
        if self.status == RunStatus.IN_PROGRESS:
            self.observe(event)
        return event

    def save(self, *, canceled: bool = False) -> None:
        """Write the run's end. Whatever this process believed before (a sweep that took
        it for dead, an admin's verdict), the run's own end is the truth."""
        if canceled and self.status == RunStatus.IN_PROGRESS:
            self.status = RunStatus.CANCELED
            self.transcript.close_text()
        elif self.status == RunStatus.IN_PROGRESS:  # ended without a final event
            self.broke()
        try:
            run = Run.objects.only("messages", "started_at").get(pk=self.invocation.run_id)
            now = timezone.now()
            Run.objects.filter(pk=self.invocation.run_id).update(
                status=self.status,
                completed_at=now,
                latency_ms=int((now - run.started_at).total_seconds() * 1000),
                tokens_usage=self.usage,
                messages=[*run.messages, *self.transcript.messages],
                output=self.output,
                error=self.error,
                lease_until=None,
            )
        finally:
            # Written or not: a run this process failed to write is left to its lease.
            run_leases.run_ended(self.invocation.run_id)
