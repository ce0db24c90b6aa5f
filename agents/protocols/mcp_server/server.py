"""The MCP server's handlers (agents.protocols.mcp_server): tools/list and tools/call over
the same selectors and run path as every other protocol. agents.protocols.mcp_server.asgi
serves them at /v1/mcp, after it has read the caller from the Bearer token."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import anyio
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    Tool,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agentbuilder.db import in_db
from agentbuilder.errors import (
    Conflict,
    DomainError,
    ErrorItem,
    Invalid,
    NotFound,
    PermissionDenied,
)
from agents.budgets.gate import BudgetExceeded
from agents.protocols.mcp_server.encoder import (
    ResultEncoder,
    failed_result,
    invalid_result,
    run_meta,
    waiting_result,
)
from agents.protocols.mcp_server.request import (
    ARGUMENTS,
    PROTOCOL,
    Approvals,
    Caller,
    approvals_of,
    client_request_id,
    decisions_of_responses,
    located_in_arguments,
    run_id_of,
    run_request,
    tool_reference,
)
from agents.protocols.mcp_server.tools import agent_tool
from agents.runs.background import run_stop
from agents.runs.start import CallTooDeep, Invocation, invocation_start
from agents.runs.stream import answered
from agents.runtime.events import Event
from agents.runtime.failures import FailureCode
from agents.selectors.agents import (
    agent_list_invocable,
    agent_seen_by_name,
    invocable_check,
    named,
)
from agents.selectors.runs import runs_live_by_client_request
from agents.selectors.versions import latest_versions
from agents.services.approvals import StillWaiting, approvals_decide, approvals_decide_by_id
from agents.telemetry.context import RequestTrace, joined

# Where agents.protocols.mcp_server.asgi puts the caller in the ASGI scope, and the set of
# handler tasks it waits for before the request ends.
CALLER_KEY = "agentbuilder.caller"
HANDLERS_KEY = "agentbuilder.handlers"
TRACE_KEY = "agentbuilder.trace"

T = TypeVar("T")

INSTRUCTIONS = (
    "Each tool is an agent of your environment. Tool and RAG agents take a `message` (and a "
    "`threadId` of your choice to continue a conversation); task agents take their inputs. "
    "A call runs the agent's latest version; `name@version` or `name@alias` runs another."
)


class UnknownTool(Exception):
    """No agent of that name that the caller may see: nothing more is said of it."""


def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    request = ctx.request
    caller = request.scope.get(CALLER_KEY) if request is not None else None
    if not isinstance(caller, Caller):  # only agents.protocols.mcp_server.asgi serves this server
        raise MCPError(INVALID_PARAMS, "no authenticated caller")
    return caller


def trace_of(ctx: ServerRequestContext[Any, Any]) -> RequestTrace:
    """The request's trace (agents.protocols.mcp_server.asgi read it), which the run it
    starts joins: the handler runs in a task of the session manager, out of its context."""
    request = ctx.request
    trace = request.scope.get(TRACE_KEY) if request is not None else None
    if not isinstance(
        trace, RequestTrace
    ):  # only agents.protocols.mcp_server.asgi serves this server
        raise MCPError(INVALID_PARAMS, "no request trace")
    return trace


def _belongs_to_request(ctx: ServerRequestContext[Any, Any]) -> None:
    """Tell the request this handler works for it. On the SDK's 2025 transport a handler
    runs in a task of the session manager, not of the request; the request must not end
    (and take its database thread with it) before the handler has recorded its run."""
    handlers = ctx.request.scope.get(HANDLERS_KEY) if ctx.request is not None else None
    task = asyncio.current_task()
    if isinstance(handlers, set) and task is not None:
        handlers.add(task)


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
) -> ListToolsResult:
    return ListToolsResult(tools=await in_db(invocable_tools)(caller_of(ctx)))


def invocable_tools(caller: Caller) -> list[Tool]:
    """The agents the caller may INVOKE in its environment, each as a tool (two queries)."""
    agents = list(agent_list_invocable(user=caller.user, environment=caller.environment))
    latest = latest_versions(agent_ids=[agent.pk for agent in agents])
    return [agent_tool(agent, latest[agent.pk]) for agent in agents if agent.pk in latest]


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    _belongs_to_request(ctx)
    try:
        with joined(trace_of(ctx)):
            invocation, thread_id = await in_db(start)(
                caller_of(ctx),
                params.name,
                params.arguments,
                ctx.request_id,
                params.input_responses,
            )
    except UnknownTool:
        # Not a run: the tool is unknown to this caller (the specification's protocol
        # error); the same words whether or not an agent of that name exists.
        raise MCPError(INVALID_PARAMS, f"Unknown tool '{params.name}'.") from None
    except NotFound as exc:  # a version or alias of an agent it may invoke
        raise MCPError(INVALID_PARAMS, f"Unknown tool '{params.name}': {exc.detail}") from None
    except PermissionDenied as exc:  # it may READ the agent, so it knows it exists
        raise MCPError(INVALID_PARAMS, f"Tool '{params.name}': {exc.detail}") from None
    except Invalid as exc:
        return invalid_result(located_in_arguments(exc), run_id_of(exc))
    except CallTooDeep as exc:  # the calling agent's model reads why
        return failed_result(CallTooDeep.code, exc.detail)
    except BudgetExceeded as exc:  # no run: a budget is spent
        return failed_result(BudgetExceeded.code, exc.detail)
    except Conflict as exc:  # decided already, or the run waits no more
        return failed_result(FailureCode.INVALID_REQUEST, exc.detail)
    except DomainError as exc:
        return failed_result(FailureCode.INVALID_REQUEST, exc.detail, run_meta(run_id_of(exc)))
    if isinstance(invocation, StillWaiting):
        return waiting_result(invocation.run_id, invocation.pending)
    return await answer(ctx, invocation, thread_id, elicit=elicits(ctx))


def elicits(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether a turn that waits asks the client's user itself: the 2026 protocol's
    input-required result, to a client that declared form elicitation (an empty
    `elicitation` capability means form, as the specification keeps it compatible)."""
    session = ctx.session
    if session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def start(
    caller: Caller,
    name: str,
    arguments: dict[str, Any] | None,
    request_id: str | int | None = None,
    responses: dict[str, Any] | None = None,
) -> tuple[Invocation | StillWaiting, str]:
    """Open the run the call asks for; its thread too (or, for a call that decides what a
    run waits on, by its `approvals` or by its answers to an input-required result, resume
    that run). Raises UnknownTool for an agent the
    caller may not see, PermissionDenied for one it may not invoke, NotFound for a version
    the agent does not have, Invalid or DomainError for a call that cannot run."""
    agent_name, version_ref = tool_reference(name)
    user, environment = caller.user, caller.environment
    # Before the arguments are read: what they say must not hint at an agent the caller
    # may not invoke. The grants read here are the run start's (RunRequest.held).
    try:
        found = agent_seen_by_name(user=user, environment=environment, name=agent_name)
    except NotFound:
        raise UnknownTool from None
    agent = found.agent
    invocable_check(found.held, in_environment=True, what=named(agent_name, environment))
    if responses:  # the retry of a call that waited: its arguments asked the run that waits
        return _resumed_or_waiting(_decide_responses(caller, responses))
    decided = approvals_of(agent, arguments)
    if decided is not None:  # no new run: the waiting one goes on
        return _decide(caller, decided)
    request = run_request(caller, found, version_ref, arguments, request_id)
    return invocation_start(request), request.thread_id


def _decide(caller: Caller, approvals: Approvals) -> tuple[Invocation | StillWaiting, str]:
    """The decisions of a call (docs/api.md#tool-approvals); the run they resume. Raises
    Invalid located under `arguments.approvals` (a request of another run, one decided
    twice in the call), Conflict (decided already, or the run waits no more), NotFound."""
    try:
        decided = approvals_decide(
            user=caller.user,
            environment=caller.environment,
            run_id=approvals.run_id,
            decisions=approvals.decided(),
        )
    except Invalid as exc:  # its locations are the API body's: `body.decisions.…`
        items = [ErrorItem((ARGUMENTS, "approvals", *e.loc[1:]), e.msg) for e in exc.errors]
        raise Invalid(items) from None
    return _resumed_or_waiting(decided)


def _decide_responses(caller: Caller, responses: dict[str, Any]) -> Invocation | StillWaiting:
    """A retry's answers to the forms of an input-required result, as decisions; the run
    is the one their requests belong to. Raises as `_decide`, located under
    `inputResponses.<key>`."""
    decisions = decisions_of_responses(responses)
    try:
        return approvals_decide_by_id(
            user=caller.user, environment=caller.environment, decisions=decisions
        )
    except Invalid as exc:  # approvals_decide's locations are the API body's
        items = [
            ErrorItem(decisions[e.loc[2]][0], e.msg)
            if e.loc[:2] == ("body", "decisions") and isinstance(e.loc[2], int)
            else e
            for e in exc.errors
        ]
        raise Invalid(items) from None


def _resumed_or_waiting(
    decided: Invocation | StillWaiting,
) -> tuple[Invocation | StillWaiting, str]:
    if isinstance(decided, StillWaiting):  # decided in part: it waits for the rest
        return decided, ""
    thread_id = decided.request.thread_id if decided.request is not None else ""
    return decided, thread_id


def cancel_requested(caller: Caller, params: object) -> int:
    """`notifications/cancelled`: the caller's run that its request `params.requestId`
    started ends `canceled`, whatever process runs it (the server is stateless: the
    notification may reach any process, and the SDK, which tracks no request across them,
    drops it). How many runs were asked to stop; a run that has ended is left as it is."""
    request_id = params.get("requestId") if isinstance(params, dict) else None
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        return 0
    runs = runs_live_by_client_request(
        user=caller.user, protocol=PROTOCOL, client_request_id=client_request_id(request_id)
    )
    return sum(run_stop(run_id=run_id, by=caller.user) for run_id in runs)


async def answer(
    ctx: ServerRequestContext[Any, Any],
    invocation: Invocation,
    thread_id: str,
    elicit: bool = False,
) -> CallToolResult | InputRequiredResult:
    """Run it: text as progress while it streams, then the result (for a client that
    elicits, a turn that waits asks for the decisions: `ResultEncoder`). A client that goes
    away cancels this handler, and with it the run (recorded `canceled`)."""
    encoder = ResultEncoder(invocation.run_id, invocation.answered_by, thread_id, elicit)

    async def progress(event: Event) -> None:
        step = encoder.progress(event)
        if step is not None:  # a no-op unless the client sent a progress token
            await _progress(ctx, *step)

    events = await to_the_end(answered(invocation, progress))
    return encoder.result(events[-1] if events else None)


async def _progress(ctx: ServerRequestContext[Any, Any], value: float, message: str) -> None:
    try:
        await ctx.session.report_progress(value, message=message)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
        # The response stream is gone with its client: a cancel, not a broken run.
        raise ConnectionResetError("the client went away") from exc


async def to_the_end(work: Coroutine[Any, Any, T]) -> T:
    """`work` in an asyncio task of its own. The SDK cancels handlers through anyio's
    cancel scopes, which cancel again at every await, so the run's last write (shielded
    for one plain asyncio cancel) would be abandoned half way; here the task is cancelled
    once and waited for, shielded, until it has recorded the run."""
    task = asyncio.get_running_loop().create_task(work)
    try:
        return await asyncio.shield(task)
    except BaseException:
        task.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.wait({task})
        raise


def _no_param_headers(name: str) -> None:
    """No tool declares `Mcp-Param` headers: without this the SDK would run tools/list
    before every call of the 2026 protocol to look for them."""
    return None


server: Server[Any] = Server(
    "agentbuilder",
    title="agentbuilder agents",
    instructions=INSTRUCTIONS,
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    get_tool_input_schema=_no_param_headers,
    # A listing is the caller's own and changes whenever an agent or a grant does: a client
    # may not keep it, nor share it with another token.
    cache_hints={"tools/list": CacheHint(ttl_ms=0, scope="private")},
)
