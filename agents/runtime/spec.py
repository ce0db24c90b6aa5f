"""What a run needs, handed in by the service: no ORM below this line."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agents.configs import AgentConfig, ApprovalPolicy
from agents.llm.base import Message, Provider, ToolSpec, Usage
from agents.mcp_client.types import McpEndpoint
from agents.runtime.approvals import Resume
from agents.runtime.depth import CallDepth
from agents.runtime.failures import FailureCode
from agents.runtime.pricing import Price
from agents.runtime.steps import RetrievalStep
from agents.runtime.trace import Trace
from guardrails.engines.rules import Rule
from retrieval.nodes import Node


@dataclass(frozen=True)
class Retriever:
    """Retrieval bound by the service to an environment and its settings."""

    search: Callable[[str], Awaitable[list[Node]]]
    hxql_query: str = ""  # the filter `search` applies, as written: for the run's trace

    async def __call__(self, query: str, trace: Trace | None = None) -> list[Node]:
        if trace is None:
            return await self.search(query)
        step = trace.start("retrieval")
        status = "failed"
        nodes: list[Node] = []
        try:
            nodes = await self.search(query)
            status = "completed"
            return nodes
        finally:
            hits = [{k: v for k, v in n.source_node().items() if k != "text"} for n in nodes]
            step.end(status, RetrievalStep(query, self.hxql_query, hits))


@dataclass(frozen=True)
class McpServerSpec:
    """An MCP server a run may use, resolved by the service (headers decrypted)."""

    name: str  # shown to the model in messages, and prefixes tool names that clash
    endpoint: McpEndpoint | None  # None: not usable in this run, `unavailable` says why
    allowed_tools: tuple[str, ...] | None = None  # None: every tool the server lists
    unavailable: str = ""
    # Which of its tools a person approves first (toolConfiguration's requireApproval,
    # then toolApprovals by the server's tool name; agents.runtime.approvals).
    require_approval: ApprovalPolicy | None = None
    tool_approvals: Mapping[str, ApprovalPolicy] = field(default_factory=dict)

    def approval(self, remote_name: str) -> ApprovalPolicy | None:
        return self.tool_approvals.get(remote_name, self.require_approval)


@dataclass(frozen=True)
class FallbackModel:
    """A model of the config's fallbackModels, as the catalog serves it."""

    model: str  # the catalog's id: what the provider is asked for, and what steps report
    provider: Provider
    provider_name: str  # the catalog's name of `provider`
    price: Price | None = None  # from the catalog; None: unknown


@dataclass(frozen=True)
class AgentSpec:
    agent_id: str
    agent_type: str
    config: AgentConfig
    provider: Provider
    model: str  # the model id reported to clients (the offline model says so)
    provider_name: str = ""  # the catalog's name of `provider`: bedrock, openai, local
    price: Price | None = None  # of `model`, from the catalog; None: unknown
    # Tried in order when a call fails before it answers (agents.runtime.model_step).
    fallbacks: tuple[FallbackModel, ...] = ()
    # task_agent tools: the resolved task agent behind each tool name
    task_agents: Mapping[str, AgentSpec] = field(default_factory=dict)
    # mcp tools: the servers of the config's references, then those the request named
    mcp_servers: tuple[McpServerSpec, ...] = ()


@dataclass(frozen=True)
class ToolChoice:
    """OpenAI's `tool_choice` for the model calls of one turn: "auto", "none" (no tool call
    at all), "required" (the first model call must call a tool) or "function" (the first
    model call must call `name`)."""

    mode: Literal["auto", "none", "required", "function"] = "auto"
    name: str = ""


@dataclass(frozen=True)
class RunInput:
    messages: tuple[Message, ...] = ()
    inputs: Mapping[str, Any] | None = None  # task agents: validated, defaults filled
    # The agent's guardrails and the request's, in the order they were named.
    guardrails: tuple[Rule, ...] = ()
    guard_window: int = 200  # characters of output held at most before a check
    # Retrieval, bound to the request's environment and overrides: "" for a RAG agent,
    # a tool's name for a tool agent's semantic_search tool.
    retrievers: Mapping[str, Retriever] = field(default_factory=dict)
    # Tool agents on /v1/openai: tools the client runs, offered to the model beside the
    # agent's own; a model call to one ends the turn (ResponseCompleted.client_calls).
    client_tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice = field(default_factory=ToolChoice)
    parallel_tool_calls: bool = True
    # Where the run sits in a chain of agents calling agents, and how deep one may go.
    call_depth: CallDepth = field(default_factory=CallDepth)
    # Tool approvals (agents.runtime.approvals): whether this run may wait for a person
    # (its protocol can say so and its request can be kept); if not, a gated call is
    # refused to the model. `resume`: the paused turn and its decisions, to go on from.
    can_pause: bool = False
    resume: Resume | None = None
    # What may stop the run between model calls and is told what each costs: the budgets
    # that apply to it (agents.budgets.gate). None: nothing to enforce.
    spend: SpendGate | None = None
    # Whether the client reads the run's text as it is made (a streamed route, a follower
    # of a background run). False: it waits for the whole answer, so unless an output
    # guardrail screens the text as it comes, each model call asks for one answer.
    stream: bool = True


class SpendGate(Protocol):
    """Sees every model call of a run, nested task agents' included. A gate may keep a
    call's charge until the next `before_call` or the run's end (`settle`): one database
    hop a model call instead of two, and none for a run's last."""

    async def before_call(self) -> None:
        """Before a model call. Raise RunFailure to end the run instead."""

    async def after_call(self, model: str, usage: Usage, cost_usd: float | None) -> None:
        """A call reported its usage; `cost_usd` None: the model has no price."""

    def settle(self) -> None:
        """Charge what is still kept, however the run ended. Called by the recorder in the
        database thread that writes the run's end (agents.runs.record)."""


class RunFailure(Exception):
    """Ends a run as failed with a code the client sees (max_iterations, …)."""

    def __init__(self, code: FailureCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Meter:
    """Token usage of every model call of a run, nested task agents included, the run's
    trace of steps (each model call with its cost), the gate its budgets keep before
    each call, and whether anything reads its text as it is made (`deltas`)."""

    usage: Usage = field(default_factory=Usage)
    model_calls: int = 0
    trace: Trace = field(default_factory=Trace)
    spend: SpendGate | None = None
    # False: neither the client nor an output guardrail reads the text delta by delta, so
    # every model call asks its provider for one answer (docs/architecture.md#non-streamed-calls).
    deltas: bool = True

    async def before_call(self) -> None:
        if self.spend is not None:
            await self.spend.before_call()

    async def add(self, model: str, usage: Usage, cost_usd: float | None) -> None:
        self.usage = self.usage + usage
        self.model_calls += 1
        if self.spend is not None:
            await self.spend.after_call(model, usage, cost_usd)
