"""RAG agents: retrieve ▸ fill {context_str} / {query_str} ▸ generate ▸ (check grounding).

Retrieval is a callable the service hands in (it reaches the database in a thread); the
flow itself stays free of the ORM.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from agents.configs import RagAgentConfig
from agents.llm.base import (
    GROUNDING_TOOL,
    QUERY_REWRITE_PROMPT,
    Message,
    ModelRequest,
    Purpose,
    ToolSpec,
)
from agents.runtime.depth import CallDepth
from agents.runtime.events import CustomOutputs, Event, ResponseCompleted, TextDelta
from agents.runtime.failures import FailureCode
from agents.runtime.guard import screen_nodes
from agents.runtime.model_step import StepResult, model_request, model_step
from agents.runtime.spec import AgentSpec, Meter, Retriever, RunFailure, RunInput
from retrieval.nodes import Node, context_str

# Below this best score the question is rewritten and retrieval tried again (multihop).
REFINE_BELOW = 0.5
MAX_REFINEMENTS = 2
GROUNDING_SCHEMA = {
    "type": "object",
    "properties": {
        "grounded": {"type": "boolean", "description": "Every sentence is supported"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["grounded", "score"],
}
REFINE_PROMPT = QUERY_REWRITE_PROMPT
GROUNDING_PROMPT = (
    "You check answers against their sources. Given the context and an answer, decide "
    "whether every sentence of the answer is supported by the context."
)


async def run_rag_agent(
    spec: AgentSpec, run_input: RunInput, meter: Meter, depth: CallDepth
) -> AsyncIterator[Event]:
    config = spec.config
    assert isinstance(config, RagAgentConfig)
    retrieve = run_input.retrievers.get("")
    if retrieve is None:
        raise RunFailure(FailureCode.UNSUPPORTED, "this run has no retrieval")
    question = _question(run_input)
    nodes = await retrieve(question, meter.trace)
    if config.enable_multihop_query_refinement:
        nodes = await _refine(spec, config, question, nodes, meter, retrieve)
    nodes = await screen_nodes(run_input.guardrails, nodes, meter.trace)
    request = _request(spec, config, run_input, question, nodes)
    outputs: CustomOutputs = {"sourceNodes": [n.source_node() for n in nodes], "ragMode": "normal"}
    if not config.enable_hallucination_check:
        step = StepResult()
        async for delta in model_step(spec, request, meter, step, stream=True):
            yield delta
        yield ResponseCompleted(usage=meter.usage, text=step.text, custom_outputs=outputs)
        return
    # The answer is checked before anyone sees it, so it is generated whole, not streamed.
    answer, check = await _grounded_answer(spec, config, request, nodes, meter)
    outputs["hallucinationCheck"] = check
    yield TextDelta(answer)
    yield ResponseCompleted(usage=meter.usage, text=answer, custom_outputs=outputs)


def _question(run_input: RunInput) -> str:
    question = next((m.text for m in reversed(run_input.messages) if m.role == "user"), "")
    if not question.strip():
        raise RunFailure(FailureCode.INVALID_REQUEST, "a RAG agent needs a user question")
    return question


_PLACEHOLDER = re.compile(r"\{(context_str|query_str)\}")


def fill_prompt(template: str, context: str, question: str) -> str:
    """The template with both placeholders filled in one pass: a passage or a question
    that happens to contain "{query_str}" stays as written."""
    values = {"context_str": context, "query_str": question}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def _request(
    spec: AgentSpec,
    config: RagAgentConfig,
    run_input: RunInput,
    question: str,
    nodes: list[Node],
    *,
    system: str | None = None,
    messages: tuple[Message, ...] | None = None,
    tools: tuple[ToolSpec, ...] = (),
    purpose: Purpose = "rag_answer",
) -> ModelRequest:
    prompt = fill_prompt(config.system_prompt, context_str(nodes) or "(none)", question)
    return model_request(
        config,
        system=prompt if system is None else system,
        messages=run_input.messages if messages is None else messages,
        tools=tools,
        force_tool=tools[0].name if tools else None,
        purpose=purpose,
        context=(n.text for n in nodes),
    )


async def _generate(spec: AgentSpec, request: ModelRequest, meter: Meter) -> StepResult:
    step = StepResult()
    async for _ in model_step(spec, request, meter, step, stream=False):
        pass
    return step


async def _refine(
    spec: AgentSpec,
    config: RagAgentConfig,
    question: str,
    nodes: list[Node],
    meter: Meter,
    retrieve: Retriever,
) -> list[Node]:
    query = question
    for _ in range(MAX_REFINEMENTS):
        if nodes and max(n.score for n in nodes) >= REFINE_BELOW:
            break
        ask = RunInput(messages=(Message("user", query),))
        step = await _generate(
            spec,
            _request(spec, config, ask, query, [], system=REFINE_PROMPT, purpose="query_rewrite"),
            meter,
        )
        rewritten = step.text.strip()
        if not rewritten or rewritten == query:
            break
        query = rewritten
        found = await retrieve(query, meter.trace)
        if found and (not nodes or max(n.score for n in found) > max(n.score for n in nodes)):
            nodes = found
    return nodes


async def _grounded_answer(
    spec: AgentSpec,
    config: RagAgentConfig,
    request: ModelRequest,
    nodes: list[Node],
    meter: Meter,
) -> tuple[str, dict[str, Any]]:
    answer = (await _generate(spec, request, meter)).text
    check = await _check(spec, config, answer, nodes, meter)
    if not check["grounded"]:
        # One more try, told why; whatever it gives is reported with its own check.
        retry = dataclasses.replace(request, system=request.system + _STRICTER)
        answer = (await _generate(spec, retry, meter)).text
        check = {**await _check(spec, config, answer, nodes, meter), "regenerated": True}
    return answer, check


_STRICTER = (
    "\n\nYour previous answer said things the context does not support. Answer again "
    "using only sentences the context supports."
)


async def _check(
    spec: AgentSpec, config: RagAgentConfig, answer: str, nodes: list[Node], meter: Meter
) -> dict[str, Any]:
    tool = ToolSpec(GROUNDING_TOOL, "Report whether the answer is grounded.", GROUNDING_SCHEMA)
    content = f"Context:\n{context_str(nodes)}\n\nAnswer:\n{answer}"
    request = ModelRequest(
        model_id=config.llm_model_id,
        system=GROUNDING_PROMPT,
        messages=(Message("user", content),),
        tools=(tool,),
        force_tool=GROUNDING_TOOL,
        max_tokens=500,
        temperature=0.0,
        max_retries=config.inference_config.max_retries,
        timeout=config.inference_config.timeout,
        purpose="grounding_check",
        context=tuple(n.text for n in nodes),
    )
    step = await _generate(spec, request, meter)
    call = next((c for c in step.tool_calls if c.name == GROUNDING_TOOL), None)
    try:
        verdict = json.loads(call.arguments) if call else {}
    except json.JSONDecodeError:
        verdict = {}
    grounded = bool(verdict.get("grounded", False))
    score = float(verdict.get("score", 1.0 if grounded else 0.0))
    return {"grounded": grounded, "score": round(min(1.0, max(0.0, score)), 3)}
