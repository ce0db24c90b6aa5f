"""Request and answer bodies of the agents API (docs/api.md#agents-and-versions)."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    SkipValidation,
    StrictBool,
    model_serializer,
)

from agentbuilder.api.pagination import PageQuery, Pagination
from agentbuilder.users import User
from agentbuilder.wire import CamelModel, OutputModel
from agents.configs import RagAgentConfig, TaskAgentConfig, ToolAgentConfig
from agents.models import (
    NAME_PATTERN,
    Agent,
    AgentVersion,
    AliasChange,
    Environment,
    LLMModel,
    Run,
    VersionAlias,
)

# Documented as the union of the three config models; validated by the service once the
# agent type is known, so errors point at the fields of that type's config.
ConfigBody = SkipValidation[ToolAgentConfig | RagAgentConfig | TaskAgentConfig]

NAME_RULE = "Letters, digits, '-', '_', '.'; 1–100."
Name = Field(pattern=NAME_PATTERN, description=NAME_RULE)
AgentTypeName = Literal["tool", "rag", "task"]


# ---------------------------------------------------------------- requests


class AgentCreate(CamelModel):
    name: str = Name
    display_name: str = Field("", max_length=200)
    description: str = Field("", max_length=200)
    agent_type: AgentTypeName
    version_label: str = Field("", max_length=100)
    notes: str = Field("", max_length=10_000)
    config: ConfigBody = Field(description="The config of the agent type (docs/api.md#configs).")


class AgentPatch(CamelModel):
    name: str | None = Field(None, pattern=NAME_PATTERN, description=NAME_RULE)
    display_name: str | None = Field(None, max_length=200)
    description: str | None = Field(None, max_length=200)


class VersionCreate(CamelModel):
    version_label: str = Field("", max_length=100)
    notes: str = Field("", max_length=10_000)
    config: ConfigBody | None = Field(None, description="Absent: copy the latest config.")


# USD per million tokens, as the catalog's fields allow (agents.models.PRICE_RANGE).
Price = Annotated[float | None, Field(ge=0, le=1000, allow_inf_nan=False)]


class ModelPricesPatch(CamelModel):
    """A catalog model's prices, USD per million tokens; null clears one (unknown)."""

    input_price_per_m_tok: Price = Field(None, alias="inputPricePerMTok")
    output_price_per_m_tok: Price = Field(None, alias="outputPricePerMTok")
    cached_input_price_per_m_tok: Price = Field(None, alias="cachedInputPricePerMTok")
    prices_as_of: date | None = Field(None, description="Absent: today.")


class AgentLookup(CamelModel):
    name: str = Field(min_length=1, max_length=100)
    version_label: str | None = Field(None, max_length=100)


class BatchGet(CamelModel):
    agent_ids: list[str] = Field(min_length=1, max_length=100)


class AliasSet(CamelModel):
    version: int = Field(ge=1, le=2**31 - 1, description="The number of the version to point at.")
    force: StrictBool = Field(
        False,
        description="Move a gated alias without its gate (needs AUDIT on the agent and a "
        "`reason`, kept in the alias history).",
    )
    reason: str = Field("", max_length=500, description="Why a forced move was forced.")


class AliasHistoryQuery(PageQuery):
    name: str | None = Field(None, max_length=50, description="One alias's changes (any case).")


class AgentListQuery(PageQuery):
    agent_type: AgentTypeName | None = None
    name: str | None = Field(None, max_length=100)


class EnvironmentCreate(CamelModel):
    name: str = Field(pattern=NAME_PATTERN, description=f"{NAME_RULE} Not a UUID.")
    description: str = Field("", max_length=200)


class ModelListQuery(PageQuery):
    agent_type: AgentTypeName | None = None


# ---------------------------------------------------------------- answers


class EnvironmentOut(OutputModel):
    id: UUID
    name: str
    description: str
    created_at: datetime

    @classmethod
    def of(cls, env: Environment) -> EnvironmentOut:
        return cls(id=env.pk, name=env.name, description=env.description, created_at=env.created_at)


class EnvironmentList(OutputModel):
    environments: list[EnvironmentOut]
    pagination: Pagination


def _username(user: User | None) -> str | None:
    return user.get_username() if user is not None else None


class AgentOut(OutputModel):
    id: UUID
    name: str
    display_name: str
    description: str
    type: AgentTypeName
    status: Literal["active", "deleted"]
    environment_id: UUID
    current_version_id: UUID | None
    created_at: datetime
    created_by: str | None
    modified_at: datetime
    modified_by: str | None

    @classmethod
    def of(cls, agent: Agent, current_version_id: UUID | None = None) -> AgentOut:
        return cls(
            id=agent.pk,
            name=agent.name,
            display_name=agent.display_name,
            description=agent.description,
            type=agent.agent_type,
            status=agent.status,
            environment_id=agent.environment_id,
            current_version_id=current_version_id or getattr(agent, "current_version_id", None),
            created_at=agent.created_at,
            created_by=_username(agent.created_by),
            modified_at=agent.modified_at,
            modified_by=_username(agent.modified_by),
        )


class VersionSummary(OutputModel):
    id: UUID
    number: int
    version_label: str
    notes: str
    created_at: datetime
    created_by: str | None

    @classmethod
    def of(cls, version: AgentVersion) -> VersionSummary:
        return cls(
            id=version.pk,
            number=version.number,
            version_label=version.version_label,
            notes=version.notes,
            created_at=version.created_at,
            created_by=_username(version.created_by),
        )


class VersionOut(VersionSummary):
    config: dict[str, Any]

    @classmethod
    def of(cls, version: AgentVersion) -> VersionOut:
        return cls(**VersionSummary.of(version).model_dump(), config=version.config_shown)


class AgentList(OutputModel):
    agents: list[AgentOut]
    pagination: Pagination


class AgentWithVersion(OutputModel):
    agent: AgentOut
    version: VersionOut


class VersionList(OutputModel):
    agent: AgentOut
    versions: list[VersionSummary]
    pagination: Pagination


class DeletedAgent(OutputModel):
    agent_id: UUID


class BatchError(OutputModel):
    agent_id: str
    status: int
    message: str


class BatchGetOut(OutputModel):
    agents: list[AgentWithVersion]
    errors: list[BatchError]


class AgentTypeOut(OutputModel):
    type: AgentTypeName
    description: str


class AgentTypeList(OutputModel):
    agent_types: list[AgentTypeOut]
    pagination: Pagination


class ModelOut(OutputModel):
    id: str
    name: str
    provider: Literal["bedrock", "openai", "local"]
    agent_types: list[AgentTypeName]
    capabilities: list[str]
    input_price_per_m_tok: float | None = Field(
        alias="inputPricePerMTok", description="USD per million input tokens; null: unknown."
    )
    output_price_per_m_tok: float | None = Field(
        alias="outputPricePerMTok", description="USD per million output tokens; null: unknown."
    )
    cached_input_price_per_m_tok: float | None = Field(
        alias="cachedInputPricePerMTok",
        description="USD per million input tokens read from the provider's prompt cache; "
        "null: billed as other input.",
    )
    prices_as_of: date | None = Field(description="When the prices were taken.")

    @classmethod
    def of(cls, model: LLMModel) -> ModelOut:
        return cls(
            id=model.pk,
            name=model.name,
            provider=model.provider,
            agent_types=model.agent_types,
            capabilities=model.capabilities,
            input_price_per_m_tok=_dollars(model.input_usd_per_mtok),
            output_price_per_m_tok=_dollars(model.output_usd_per_mtok),
            cached_input_price_per_m_tok=_dollars(model.cached_input_usd_per_mtok),
            prices_as_of=model.prices_as_of,
        )


def _dollars(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


class ModelList(OutputModel):
    models: list[ModelOut]
    pagination: Pagination


class AliasOut(OutputModel):
    name: str
    version: int
    version_id: UUID
    updated_at: datetime
    updated_by: str | None

    @classmethod
    def of(cls, alias: VersionAlias) -> AliasOut:
        return cls(
            name=alias.name,
            version=alias.version.number,
            version_id=alias.version_id,
            updated_at=alias.updated_at,
            updated_by=_username(alias.updated_by),
        )


class AliasList(OutputModel):
    aliases: list[AliasOut]


class AliasChangeOut(OutputModel):
    name: str
    from_version: int | None = Field(description="null when the change created the alias.")
    to_version: int | None = Field(description="null when the change deleted the alias.")
    changed_at: datetime
    changed_by: str | None
    experiment_id: UUID | None = Field(
        description="A gated alias's move: the experiment that passed its gate."
    )
    forced_reason: str | None = Field(
        description="A move forced past the alias's gate: why (null otherwise)."
    )

    @classmethod
    def of(cls, change: AliasChange) -> AliasChangeOut:
        return cls(
            name=change.name,
            from_version=change.from_version.number if change.from_version else None,
            to_version=change.to_version.number if change.to_version else None,
            changed_at=change.changed_at,
            changed_by=_username(change.changed_by),
            experiment_id=change.experiment_id,
            forced_reason=change.forced_reason or None,
        )


class AliasHistory(OutputModel):
    changes: list[AliasChangeOut]
    pagination: Pagination


class RunListQuery(PageQuery):
    agent_id: UUID | None = None
    status: (
        Literal["queued", "in_progress", "awaiting_approval", "completed", "failed", "canceled"]
        | None
    ) = None
    thread_id: str | None = Field(None, max_length=100)
    caller_id: int | None = Field(None, ge=1, description="With AUDIT: one caller's runs.")
    schedule_id: UUID | None = Field(None, description="The runs a schedule's ticks started.")


class RunEventsQuery(CamelModel):
    # RunEvent.index is a PostgreSQL integer: a larger start could not be compared with it.
    after: int = Field(
        0, ge=0, le=2**31 - 1, description="The index of the first event to send (0: all)."
    )


class ThreadQuery(CamelModel):
    caller_id: int | None = Field(None, ge=1, description="With AUDIT: another caller's thread.")


class TokensUsage(OutputModel):
    model_config = OutputModel.model_config | {"alias_generator": None}

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int | None = Field(
        None,
        description="The part of input_tokens the provider read from its prompt cache "
        "(billed at the cached price); present only when a provider reported one.",
    )

    @model_serializer(mode="wrap")
    def _without_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class RunOut(OutputModel):
    id: UUID
    agent_id: UUID
    version_id: UUID
    caller_id: int | None
    protocol: str
    status: Literal["queued", "in_progress", "awaiting_approval", "completed", "failed", "canceled"]
    started_at: datetime
    completed_at: datetime | None
    latency_ms: int | None
    tokens_usage: TokensUsage
    thread_id: str | None
    messages: list[dict[str, Any]]
    output: Any
    error: dict[str, Any] | None
    steps: list[dict[str, Any]] = Field(
        description="What the run did, in order: model_call, tool_call, retrieval and "
        "guardrail steps, each with startedAt, latencyMs and status; a guardrail step's "
        "`detected` says what it found (kind, detector, score, span)."
    )
    schedule_id: UUID | None = Field(
        None, description="The schedule whose tick started it (protocol `schedule`)."
    )
    cost_usd: float | None = Field(
        None,
        description="What its model calls cost, each at its model's catalog price (USD); "
        "null when a model it used has no price.",
    )
    model: str | None = Field(
        None,
        description="The model that answered: that of the run's last completed model call "
        "(a fallback model when the version's failed); null when none answered.",
    )
    trace_id: str | None = Field(
        None,
        description="The W3C trace id of the run's trace (32 hex digits): the caller's "
        "`traceparent`'s, else a new one; the answer's `traceparent` header carries it.",
    )

    @classmethod
    def of(cls, run: Run) -> RunOut:
        return cls(
            id=run.pk,
            agent_id=run.agent_id,
            version_id=run.version_id,
            caller_id=run.caller_id,
            protocol=run.protocol,
            status=run.status,
            started_at=run.started_at,
            completed_at=run.completed_at,
            latency_ms=run.latency_ms,
            tokens_usage=TokensUsage(**run.tokens_usage),
            thread_id=run.thread_id or None,
            messages=run.messages,
            output=run.output,
            error=run.error,
            steps=run.steps,
            schedule_id=run.schedule_id,
            cost_usd=_dollars(run.cost_usd),
            model=_answered_by(run.steps),
            trace_id=run.trace_id or None,
        )


def _answered_by(steps: list[dict[str, Any]]) -> str | None:
    """The model of the last completed model call of the run itself (not of a task agent
    run as its tool: those steps name a `parent`)."""
    for step in reversed(steps):
        own = step.get("type") == "model_call" and "parent" not in step
        if own and step.get("status") == "completed":
            return str(step["model"])
    return None


class RunList(OutputModel):
    runs: list[RunOut]
    pagination: Pagination


class ThreadRun(OutputModel):
    id: UUID
    agent_id: UUID
    status: str
    started_at: datetime


class ThreadOut(OutputModel):
    thread_id: str
    runs: list[ThreadRun]
    messages: list[dict[str, Any]]
