"""Agent configs by type (docs/api.md#configs), written once and used by the API, the admin
and the OpenAPI schema.

These models check everything that needs no database: shapes, ranges, unknown keys,
JSON Schemas and templates. Checks against the catalogs (models, functions, guardrails,
task agents) live in `agents.services.config_check`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self
from uuid import UUID

from pydantic import Field, field_validator, model_validator

from agentbuilder.errors import Invalid
from agentbuilder.wire import CamelModel, parse
from agents import json_schemas
from agents.templating import template_limits
from agents.templating.static import TooLarge, check_limits, field_types, template_variables
from retrieval.configs import RagSettings

TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"  # what Bedrock and OpenAI both accept as a tool name
# Each one a failing call may go through before the run fails: a few, or it never ends.
MAX_FALLBACK_MODELS = 3

DEFAULT_RAG_PROMPT = (
    "You are a careful assistant that answers questions from the documents below.\n"
    "Use only the context. If the context does not contain the answer, say that you do "
    "not know. Cite the numbers of the passages you used, like [1].\n\n"
    "Context:\n{context_str}\n\nQuestion: {query_str}\nAnswer:"
)


def _check_json_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    if schema is None:
        return None
    try:
        json_schemas.check(schema)
    except json_schemas.SchemaRefused as exc:
        # The field is the location; where inside the schema goes into the message.
        at = f" at {exc.where}" if exc.path else ""
        raise ValueError(f"invalid JSON Schema{at}: {exc.message}") from None
    if schema.get("type") != "object":
        raise ValueError('the schema must describe an object: "type": "object"')
    return schema


JsonSchema = Annotated[dict[str, Any], Field(json_schema_extra={"type": "object"})]


class InferenceConfig(CamelModel):
    max_tokens: int = Field(4000, ge=1, le=200_000)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_retries: int = Field(10, ge=0, le=20)
    timeout: float = Field(3600, gt=0, le=3600, description="Seconds.")


class BaseAgentConfig(CamelModel):
    llm_model_id: str = Field(min_length=1, max_length=200)
    system_prompt: str = Field("", max_length=100_000)
    inference_config: InferenceConfig = InferenceConfig()
    guardrails: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(
        default_factory=list, max_length=20
    )
    # Left out of the stored form when not set, so configs written before it read the same.
    context_guardrails: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = Field(
        None,
        max_length=20,
        description="Guardrails of the context stage: they check retrieved passages and tool "
        "results before the model reads them. A passage one blocks is dropped; a tool result "
        "is replaced by a notice. The run's trace shows each as a guardrail step.",
    )
    # Left out of the stored form when not set, so configs written before it read the same.
    fallback_models: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        None,
        max_length=MAX_FALLBACK_MODELS,
        description="Catalog models tried in order when the model fails before it answers "
        "(a provider error, a timeout, throttling), not when it refuses the request as "
        "invalid. The run's model_call steps show each attempt and the model that answered.",
    )

    @model_validator(mode="after")
    def _fallbacks_distinct(self) -> Self:
        seen = {self.llm_model_id}
        for index, model in enumerate(self.fallback_models or ()):
            if model in seen:
                what = "the config's model" if model == self.llm_model_id else "listed already"
                raise Invalid.at(("fallbackModels", index), f"model '{model}' is {what}")
            seen.add(model)
        return self


# ---------------------------------------------------------------- tools


class ArgumentsMatch(CamelModel):
    """Approval when the call's arguments validate against this schema."""

    arguments_match: JsonSchema

    @field_validator("arguments_match")
    @classmethod
    def _usable(cls, schema: dict[str, Any]) -> dict[str, Any]:
        try:
            json_schemas.check(schema)
        except json_schemas.SchemaRefused as exc:
            at = f" at {exc.where}" if exc.path else ""
            raise ValueError(f"invalid JSON Schema{at}: {exc.message}") from None
        return schema


# Whether a person approves a call before it runs (docs/api.md#tool-approvals): "never"
# (what a tool without one does), "always", or when the arguments match a schema.
ApprovalPolicy = Literal["never", "always"] | ArgumentsMatch

REQUIRE_APPROVAL = (
    'Whether a person must approve a call of this tool before it runs: "never" (the '
    'default), "always", or {"argumentsMatch": <JSON Schema>} (when the arguments validate; '
    "arguments that do not parse need approval too). The run waits `awaiting_approval`."
)


class NamedTool(CamelModel):
    name: str = Field(pattern=TOOL_NAME)
    description: str = Field(min_length=1, max_length=1000)


class GatedTool(NamedTool):
    # Left out of the stored form when not set, so configs written before it read the same.
    require_approval: ApprovalPolicy | None = Field(None, description=REQUIRE_APPROVAL)


class FunctionTool(GatedTool):
    tool_type: Literal["function"]
    func_name: str = Field(min_length=1, max_length=100)


class StructuredOutputTool(NamedTool):
    tool_type: Literal["structured_output"]
    output_schema: JsonSchema

    _schema = field_validator("output_schema")(_check_json_schema)


class TaskAgentTool(GatedTool):
    tool_type: Literal["task_agent"]
    agent_id: UUID
    agent_version: Literal["latest"] | Annotated[int, Field(ge=1)] = "latest"


class McpToolConfiguration(CamelModel):
    allowed_tools: list[str] | None = None
    require_approval: ApprovalPolicy | None = Field(
        None, description="For every tool of the server: " + REQUIRE_APPROVAL
    )
    tool_approvals: (
        dict[Annotated[str, Field(min_length=1, max_length=200)], ApprovalPolicy] | None
    ) = Field(
        None,
        max_length=200,
        description="Per tool of the server, by the name the server gives it: its "
        "requireApproval, over the server's.",
    )


class McpServerReference(CamelModel):
    id: UUID | None = None
    url: Annotated[str, Field(pattern=r"^https?://", max_length=2000)] | None = None
    tool_configuration: McpToolConfiguration = McpToolConfiguration()

    @model_validator(mode="after")
    def _id_or_url(self) -> McpServerReference:
        if (self.id is None) == (self.url is None):
            raise ValueError("give exactly one of 'id' or 'url'")
        return self


class McpTool(CamelModel):
    tool_type: Literal["mcp"]
    mcp_server_references: list[McpServerReference] = Field(min_length=1, max_length=20)


class RagTool(GatedTool):
    tool_type: Literal["rag"]
    func_name: Literal["semantic_search"] = "semantic_search"
    semantic_search_config: RagSettings = RagSettings()


Tool = Annotated[
    FunctionTool | StructuredOutputTool | TaskAgentTool | McpTool | RagTool,
    Field(discriminator="tool_type"),
]


# ---------------------------------------------------------------- agent types


class ToolAgentConfig(BaseAgentConfig):
    tools: list[Tool] = Field(min_length=1, max_length=50)
    max_iterations: int = Field(10, ge=1, le=20)
    approval_ttl: int | None = Field(
        None,
        ge=60,
        le=30 * 86400,
        description="Seconds a run may wait for a decision on a call that needs approval "
        "(default 86400); then it ends `canceled` / `approval_expired`.",
    )

    @model_validator(mode="after")
    def _tool_names(self) -> ToolAgentConfig:
        seen: set[str] = set()
        structured = 0
        for index, tool in enumerate(self.tools):
            if isinstance(tool, StructuredOutputTool):
                structured += 1
                if structured > 1:
                    raise Invalid.at(("tools", index), "only one structured_output tool is allowed")
            name = getattr(tool, "name", None)
            if name is None:
                continue
            if name in seen:
                raise Invalid.at(("tools", index, "name"), f"duplicate tool name '{name}'")
            seen.add(name)
        return self


class RagAgentConfig(BaseAgentConfig, RagSettings):
    system_prompt: str = Field(DEFAULT_RAG_PROMPT, max_length=100_000)

    @field_validator("system_prompt")
    @classmethod
    def _has_context(cls, prompt: str) -> str:
        if "{context_str}" not in prompt:
            raise ValueError("the prompt must contain {context_str}, where the passages go")
        return prompt


class TaskAgentConfig(BaseAgentConfig):
    system_prompt: str = Field(min_length=1, max_length=100_000)
    input_schema: JsonSchema
    output_schema: JsonSchema | None = None

    _schemas = field_validator("input_schema", "output_schema")(_check_json_schema)

    @field_validator("system_prompt")
    @classmethod
    def _template_parses(cls, prompt: str) -> str:
        template_variables(prompt)
        return prompt

    @model_validator(mode="after")
    def _variables_declared(self) -> TaskAgentConfig:
        declared = set(self.input_schema.get("properties", {}))
        missing = sorted(template_variables(self.system_prompt) - declared)
        if missing:
            names = ", ".join(f"'{m}'" for m in missing)
            raise Invalid.at(("systemPrompt",), f"template variables not in inputSchema: {names}")
        return self

    @model_validator(mode="after")
    def _within_limits(self) -> TaskAgentConfig:
        # What the constants already show; the rest is bounded while rendering.
        types = field_types(self.input_schema)
        try:
            check_limits(self.system_prompt, template_limits(), types)
        except TooLarge as exc:
            raise Invalid.at(("systemPrompt",), f"the template is over a limit: {exc}") from None
        return self


AgentConfig = ToolAgentConfig | RagAgentConfig | TaskAgentConfig

CONFIG_MODELS: dict[str, type[AgentConfig]] = {
    "tool": ToolAgentConfig,
    "rag": RagAgentConfig,
    "task": TaskAgentConfig,
}


def config_parse(agent_type: str, data: Any, *prefix: str | int) -> AgentConfig:
    """Validate a config for `agent_type`; raises Invalid with paths under `prefix`."""
    return parse(CONFIG_MODELS[agent_type], data, *prefix)


def config_dump(config: AgentConfig) -> dict[str, Any]:
    """The stored (and answered) form: camelCase keys, every default filled in."""
    return config.model_dump(mode="json", by_alias=True, exclude_none=True)
