"""Starting a run: check the call, open its run record and build what the runtime needs.

`invocation_start` does every read (and the run row) before the stream begins, so the
stream itself holds no database connection.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from agentbuilder import liveness
from agentbuilder.db import insert_new
from agentbuilder.errors import DomainError, ErrorItem, Invalid
from agentbuilder.users import User
from agents.access.rate_limits import TokensCharged, caller_limits, tokens_admit
from agents.budgets.gate import BudgetExceeded, BudgetGate, budget_gate
from agents.configs import NamedTool, TaskAgentConfig, ToolAgentConfig
from agents.llm.base import Message
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from agents.models import Environment, LLMModel, Run, RunStatus
from agents.runs import leases
from agents.runs.lookup import RunTarget, draft_target, run_target
from agents.runs.request import RunRequest, can_pause, request_json
from agents.runs.spec import agent_spec, retrievers, with_max_iterations, with_request_servers
from agents.runs.spending import spend_gate
from agents.runtime.depth import CallDepth
from agents.runtime.engine import new_response_id
from agents.runtime.failures import FailureCode
from agents.runtime.messages import MESSAGE_ROLES, message_from_json, message_json
from agents.runtime.spec import AgentSpec, RunInput
from agents.runtime.task_agent import TaskInputError, prepare_inputs
from agents.runtime.tracecontext import RunTrace, new_span_id, new_trace_id
from agents.telemetry.context import run_trace
from agents.templating import TemplateLimitError
from agents.webhooks.guard import webhook_check
from guardrails.engines.rules import Rule
from guardrails.selectors import guardrail_rules, unknown_guardrail_names

logger = logging.getLogger(__name__)

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
    protocol: str = ""  # as the run record names it (RunRequest.protocol)
    # A run that may wait for approvals: its request, kept if it pauses (agents.runs.approvals).
    request: RunRequest | None = None
    # A resumed run: the events and steps of its turns before, which this one continues.
    events_before: int = 0
    steps_before: list[dict[str, Any]] = field(default_factory=list)
    # Its place in a trace (agents.telemetry.context), and what its spans say of it.
    trace: RunTrace = field(default_factory=lambda: RunTrace.under(None))
    thread_id: str = ""
    environment: str = ""  # the environment's name
    draft: bool = False  # an unsaved config ran, not the version's (RunRequest.draft)
    # When the run (this turn) began, as its row's started_at: its clocks (latency, the
    # root span) start here, not when its events begin to flow, which a loaded server may
    # reach much later.
    started_ns: int = field(default_factory=time.time_ns)
    started_monotonic_ns: int = field(default_factory=time.monotonic_ns)

    @property
    def answered_by(self) -> str:
        if self.draft:
            return f"{self.agent_name}@draft (from {self.version_number})"
        return f"{self.agent_name}@{self.version_number}"


def invocation_start(request: RunRequest) -> Invocation:
    """Check the call, open its run and build the runtime spec.

    Raises CallTooDeep, NotFound, PermissionDenied or BudgetExceeded (a spent budget) before
    any run exists; after that, DomainError (wrong agent type) or Invalid, carrying
    `run_id`, with the run left `failed`. RateLimited, before anything, while the caller's
    tokens of the minute are spent.
    """
    _admitted(request)
    call_depth, target = _checked(request)
    budgets = _budgets(request, target)
    history = thread_history(
        agent_id=target.agent_id, caller=request.user, thread_id=request.thread_id
    )
    trace = run_trace()
    run = _run(request, target, trace)
    insert_new(run)
    return _opened(request, target, run, history, call_depth, budgets, trace)


def invocation_queue(request: RunRequest) -> uuid.UUID:
    """Check the call as `invocation_start` does, raising the same errors, and open its run
    `queued`, pinned to the version it resolved, with the request kept on its row for the
    worker that takes it (`invocation_claimed`). Nothing runs here."""
    _admitted(request)
    call_depth, target = _checked(request)
    _budgets(request, target)  # refused now; the worker that takes it reads them again
    trace = run_trace()
    run = _run(request, target, trace)
    run.status = RunStatus.QUEUED
    run.queued_at = timezone.now()
    run.lease_until = queue_lease_expiry()
    # The worker's run is the span the queueing request's answer named.
    run.request = request_json(request) | {"trace": trace.as_json()}
    insert_new(run)
    leases.run_inserted(run.pk)
    try:
        _prepared(request, target, run, (), call_depth)  # its checks, as the worker's will be
    finally:
        leases.run_ended(run.pk)  # a queued run holds no process
    return run.pk


def invocation_claimed(run: Run, request: RunRequest, trace: RunTrace | None = None) -> Invocation:
    """The invocation of a queued run a worker has just claimed (now `in_progress`, leased
    by this process): `request` as `invocation_queue` kept it, `trace` as it kept that
    (else a new span in the run's trace: a turn resumed after approvals). The caller's
    right to run the version is checked again, as it stands now; a refusal fails the run."""
    try:
        call_depth, target = _checked(request)
        budgets = _budgets(request, target)
    except BudgetExceeded as exc:  # spent while it was queued or waited for approvals
        _fail(run, exc.code, exc.detail)
        raise
    except DomainError as exc:  # NotFound, PermissionDenied, CallTooDeep
        _fail(run, FailureCode.INVALID_REQUEST, str(exc))
        raise
    history = thread_history(
        agent_id=target.agent_id, caller=request.user, thread_id=request.thread_id
    )
    if trace is None:
        trace_id = int(run.trace_id, 16) if run.trace_id else new_trace_id()
        trace = RunTrace(trace_id, new_span_id())
    return _opened(request, target, run, history, call_depth, budgets, trace)


def queue_lease_expiry() -> datetime:
    """Until when a queued run's message is trusted to reach a worker: past it, any live
    process hands the run to a worker again (agents.runs.background)."""
    return timezone.now() + timedelta(seconds=float(settings.RUN_QUEUE_LEASE_SECONDS))


def _admitted(request: RunRequest) -> None:
    """A new run waits while its caller's tokensPerMinute is spent. A queued run a worker
    claims, or a run resumed by a decision, was admitted already."""
    limits = caller_limits(request.user)
    if limits is not None:
        tokens_admit(limits)


def _checked(request: RunRequest) -> tuple[CallDepth, RunTarget]:
    call_depth = CallDepth(request.call_depth, int(settings.MAX_AGENT_DEPTH))
    if call_depth.exceeded:
        # Before the run opens: the refused call is no run of its own (a chain of agents
        # calling agents makes MAX_AGENT_DEPTH + 1 runs), and its caller's run has the reason.
        raise CallTooDeep(call_depth.refusal())
    if request.webhook is not None:  # refused before anything is written
        webhook_check(request.webhook)
    target = run_target(
        user=request.user,
        environment=request.environment,
        agent_id=request.agent_id,
        ref=request.version_ref,
        name=request.agent_name,
        held=request.held,
    )
    if request.draft is not None:
        target = draft_target(target, request.draft)
    return call_depth, target


def _budgets(request: RunRequest, target: RunTarget) -> BudgetGate | None:
    """The gate of the budgets that apply to the run (None: none does), as its lookup read
    them. Raises BudgetExceeded (a 402) for a spent one."""
    return budget_gate(
        target.budgets,
        environment_id=target.environment_id,
        now=target.read_at or datetime.now(UTC),
    )


def _run(request: RunRequest, target: RunTarget, trace: RunTrace) -> Run:
    return Run(
        trace_id=trace.trace_hex,
        agent_id=target.agent_id,
        version_id=target.version_id,
        caller=request.user,
        protocol=request.protocol,
        response_id=new_response_id(),
        thread_id=request.thread_id,
        messages=[message_json(m) for m in request.messages],
        lease_until=liveness.lease_expiry(),
        schedule_id=request.schedule_id,
        client_request_id=request.client_request_id,
        webhook=request.webhook.stored() if request.webhook is not None else None,
        draft_config=request.draft,
    )


def _opened(
    request: RunRequest,
    target: RunTarget,
    run: Run,
    history: tuple[Message, ...],
    call_depth: CallDepth,
    budgets: BudgetGate | None,
    trace: RunTrace,
) -> Invocation:
    leases.run_inserted(run.pk)
    spec, run_input = _prepared(request, target, run, history, call_depth)
    limits = caller_limits(request.user)
    tokens = None if limits is None or limits.tokens_per_minute is None else TokensCharged(limits)
    # A run nothing applies to has no gate, and pays nothing for one.
    run_input = replace(run_input, spend=spend_gate((budgets, tokens)))
    invocation = Invocation(
        run.pk,
        run.response_id,
        spec,
        run_input,
        target.agent_name,
        target.version_number,
        request.protocol,
    )
    invocation.trace, invocation.thread_id = trace, request.thread_id
    invocation.environment = request.environment.name
    invocation.draft = request.draft is not None
    if run_input.can_pause:
        invocation.request = request
    leases.run_opened(run.pk, invocation)
    return invocation


def _prepared(
    request: RunRequest,
    target: RunTarget,
    run: Run,
    history: tuple[Message, ...],
    call_depth: CallDepth,
) -> tuple[AgentSpec, RunInput]:
    """The run's spec and input; a refusal fails the run and carries its id."""
    try:
        spec, run_input = _prepare(request, target, run, history)
        return spec, replace(run_input, call_depth=call_depth)
    except TemplateOverLimit as exc:
        _fail(run, exc.code, exc.message)
        exc.run_id = run.pk
        raise
    except (Invalid, DomainError) as exc:
        _fail(run, FailureCode.INVALID_REQUEST, str(exc))
        exc.run_id = run.pk
        raise
    except BaseException:
        logger.exception("opening run %s failed", run.pk)
        _fail(run, FailureCode.INTERNAL_ERROR, "the run could not be started")
        raise


def _prepare(
    request: RunRequest, target: RunTarget, run: Run, history: tuple[Message, ...]
) -> tuple[AgentSpec, RunInput]:
    if target.agent_type not in request.agent_types:
        raise DomainError(
            f"Agent type {target.agent_type} not supported in {request.route} endpoints. "
            + WHERE_TO_CALL[target.agent_type]
        )
    environment = request.environment
    _check_guardrails(request.guardrails, environment)
    spec = agent_spec(target=target)
    spec = _check_attachments(spec, request.messages)
    spec = with_max_iterations(spec, request.max_iterations)
    spec = with_request_servers(spec, environment, request.mcp_servers)
    _check_client_tools(spec, request)
    rules = tuple(_rules([*spec.config.guardrails, *request.guardrails], environment))
    # The context stage's guardrails check passages and tool results, whatever stages their
    # catalog rows name for the agent's own input and output.
    rules += tuple(
        replace(rule, stages=frozenset({"context"}))
        for rule in _rules(spec.config.context_guardrails or [], environment)
    )
    if isinstance(spec.config, TaskAgentConfig):
        inputs, _ = _task_inputs(spec.config, request.inputs)
        Run.objects.filter(pk=run.pk).update(messages=[{"role": "user", "inputs": inputs}])
        return spec, RunInput(
            inputs=inputs, guardrails=rules, guard_window=_window(), stream=request.stream
        )
    return spec, RunInput(
        messages=(*history, *request.messages),
        guardrails=rules,
        guard_window=_window(),
        retrievers=retrievers(spec, environment, request.rag_overrides),
        client_tools=request.client_tools,
        tool_choice=request.tool_choice,
        parallel_tool_calls=request.parallel_tool_calls,
        can_pause=can_pause(request, spec),
        stream=request.stream,
    )


def _check_client_tools(spec: AgentSpec, request: RunRequest) -> None:
    """A client's tools go to tool agents only, named unlike the agent's own; a named
    tool_choice names one of either. (MCP tools are listed when the run starts: a clash
    with one fails the run there.)"""
    choice = request.tool_choice
    if not request.client_tools and choice.mode in ("auto", "none"):
        return
    config = spec.config
    if not isinstance(config, ToolAgentConfig):
        field = "tools" if request.client_tools else "tool_choice"
        raise Invalid.at(("body", field), f"a {spec.agent_type} agent calls no tools")
    own = {tool.name for tool in config.tools if isinstance(tool, NamedTool)}
    for index, tool in enumerate(request.client_tools):
        if tool.name in own:
            raise Invalid.at(
                ("body", "tools", index, "function", "name"),
                f"the agent has a tool named '{tool.name}' already; name yours otherwise",
            )
    known = own | {tool.name for tool in request.client_tools}
    if choice.mode == "function" and choice.name not in known and not spec.mcp_servers:
        raise Invalid.at(
            ("body", "tool_choice", "function", "name"),
            f"'{choice.name}' is neither one of the agent's tools nor one of the request's",
        )


def _check_attachments(spec: AgentSpec, messages: tuple[Message, ...]) -> AgentSpec:
    """Refuse, naming the part, an image or document the model cannot read: the catalog's
    `images` and `documents` capabilities say which can. The spec without the fallback
    models that cannot read them either: such a model would only refuse the request."""
    sent = [a for m in messages for a in m.attachments]
    if not sent:
        return spec
    served_by = LOCAL_MODEL if settings.LLM_OFFLINE else spec.config.llm_model_id
    models = [served_by, *(f.model for f in spec.fallbacks)]
    reads = dict(LLMModel.objects.filter(pk__in=models).values_list("pk", "capabilities"))
    for attachment in sent:
        if f"{attachment.kind}s" not in reads.get(served_by, ()):
            raise Invalid.at(
                attachment.loc, f"the model '{served_by}' cannot read {attachment.kind}s"
            )
    kinds = {f"{a.kind}s" for a in sent}
    readable = tuple(f for f in spec.fallbacks if kinds <= set(reads.get(f.model, ())))
    return replace(spec, fallbacks=readable)


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


def _window() -> int:
    return int(settings.GUARDRAIL_WINDOW_CHARS)


class CallTooDeep(DomainError):
    """A call past MAX_AGENT_DEPTH in a chain of agents calling agents: a 400, and no run."""

    code = FailureCode.CALL_TOO_DEEP


class TemplateOverLimit(DomainError):
    """A task agent's prompt template went over a limit with these inputs: a 400, and the
    run `failed` with this code."""

    code = FailureCode.TEMPLATE_LIMIT

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


def _fail(run: Run, code: FailureCode, message: str) -> None:
    leases.run_ended(run.pk)  # closed here: nothing is left to renew
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.FAILED,
        completed_at=timezone.now(),
        latency_ms=0,
        error={"code": code, "message": message},
        lease_until=None,
    )


def thread_history(*, agent_id: uuid.UUID, caller: User, thread_id: str) -> tuple[Message, ...]:
    """The messages of the caller's thread's earlier completed turns with this agent, oldest
    first. A thread belongs to its caller: another caller's same id is another thread."""
    if not thread_id:
        return ()
    turns = (
        Run.objects.filter(
            agent_id=agent_id, caller=caller, thread_id=thread_id, status=RunStatus.COMPLETED
        )
        .order_by("started_at", "id")
        .values_list("messages", flat=True)
    )
    return tuple(
        message_from_json(m) for turn in turns for m in turn if m.get("role") in MESSAGE_ROLES
    )
