"""What recording a run's steps costs in CPU: the runtime's runs with the real trace, and
their JSON, next to the same runs with a trace that records nothing, in this process.

    .venv/bin/python bench/trace_cost.py [--quick] [--rounds N] [--runs N]

No database, no server, no network: `agents.runtime.engine.run` driven directly on one
event loop, as agents/runs/stream.py drives it, against the offline model (local.demo-v1).
Workloads: the Calculator (agents/examples.py) answering "What is 3x5?" (model call, tool
call, model call: three steps); a task agent (tests/factories.py's TASK_CONFIG: one model
call); the Calculator again with its own guardrail and HAIP-Profanity (the rules built as
guardrails.selectors.guardrail_rules builds them from the shipped catalog's rows), which
pass it: the same three steps, with the input and output checks.

Sides: `traced`, a real Trace; `untraced`, a Trace whose start hands out one inert step and
whose steps are always []. Both end every run as the run recorder does, with
`json.dumps(trace.steps)` (the untraced side writes "[]"). Rounds of `--runs` runs a side,
the sides alternating run by run (AB BA AB ...: both meet the same drift of a shared
machine), a full collection before each round. The CPU is `time.process_time()` around
each run (the worker threads of tools and task templates included). Prints figures;
asserts nothing about time; exits 1 if a run's answer or steps are wrong, or if anything
tried to open a database connection.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from common import machine, table

# common, imported first, has said which package is missing, if one is.
# isort: split
from django.db.backends.base.base import BaseDatabaseWrapper

from agents.configs import config_parse
from agents.examples import CALCULATOR
from agents.llm.base import Message
from agents.llm.local import MODEL_ID as LOCAL_MODEL
from agents.llm.registry import provider_for
from agents.runtime.engine import run
from agents.runtime.events import Event, ResponseCompleted
from agents.runtime.spec import AgentSpec, Meter, RunInput
from agents.runtime.task_agent import prepare_inputs
from agents.runtime.trace import Step, Trace
from guardrails.engines.registry import engine_for
from guardrails.engines.rules import Rule, stages_of

# tests/factories.py's TASK_CONFIG (that module needs factory-boy, a dev requirement).
TASK_CONFIG: dict[str, Any] = {
    "llmModelId": "local.demo-v1",
    "systemPrompt": "Summarise for {{ audience }}: {{ text }}",
    "inputSchema": {
        "type": "object",
        "properties": {"audience": {"type": "string"}, "text": {"type": "string"}},
        "required": ["text"],
    },
}
TASK_INPUTS = {"audience": "engineers", "text": "Every run records its steps."}
QUESTION = "What is 3x5?"
TOOL_ANSWER = "The result of multiply(3, 5) is 15."
TASK_ANSWER = "Done: Summarise for engineers: Every run records its steps."
# The shipped catalog's engines (a migration's module name starts with a digit).
CATALOG: dict[str, dict[str, Any]] = importlib.import_module(
    "guardrails.migrations.0004_catalog_engines"
).ENGINES


# ---------------------------------------------------------------- the baseline


class _InertStep(Step):
    """A step that times nothing and keeps nothing."""

    def __init__(self) -> None:
        super().__init__("unrecorded", {})

    def elapsed_ms(self) -> int:
        return 0

    def end(self, status: str, **fields: Any) -> None:
        pass


_INERT = _InertStep()


class UnrecordedTrace(Trace):
    """Trace's interface, recording nothing: `start` hands out one shared inert step, `add`
    drops the step, `steps` is always []. (`within` is Trace's own: its context variable
    is set and reset on both sides.)"""

    def start(self, kind: str, **fields: Any) -> Step:
        return _INERT

    def add(self, step: Step) -> None:
        pass

    @property
    def steps(self) -> list[dict[str, Any]]:
        return []


SIDES: dict[str, Callable[[], Trace]] = {"untraced": UnrecordedTrace, "traced": Trace}


# ---------------------------------------------------------------- workloads


def offline_spec(agent_type: str, config: dict[str, Any]) -> AgentSpec:
    """What agents.runs.spec.agent_spec builds for a version under LLM_OFFLINE (no task
    agents or MCP servers behind the tools), without the ORM."""
    return AgentSpec(
        agent_id=f"bench-{agent_type}",
        agent_type=agent_type,
        config=config_parse(agent_type, config),
        provider=provider_for("local"),
        model=LOCAL_MODEL,
        provider_name="local",
    )


def catalog_rules(names: list[str]) -> tuple[Rule, ...]:
    """guardrails.selectors.guardrail_rules for the shipped catalog's global rows, without
    the query: unsaved rows with the catalog's engine configs and the model's defaults."""
    from guardrails.models import Guardrail

    rules = []
    for name in dict.fromkeys(names):
        row = Guardrail(name=name, engine="local", engine_config=CATALOG[name])
        rules.append(
            Rule(
                name=row.name,
                engine=engine_for(row.engine, row.engine_config, fail_open=row.fail_open),
                stages=stages_of(row.engine_config),
                blocked_input=row.blocked_input_message,
                blocked_output=row.blocked_output_message,
            )
        )
    return tuple(rules)


@dataclass(frozen=True)
class Workload:
    name: str
    spec: AgentSpec
    run_input: RunInput
    answer: str
    steps: tuple[str, ...]  # the types of the steps a traced run records


def workloads() -> list[Workload]:
    from django.conf import settings

    calculator = offline_spec("tool", CALCULATOR["config"])
    question = RunInput(messages=(Message("user", QUESTION),))
    task = offline_spec("task", TASK_CONFIG)
    inputs, _ = prepare_inputs(task.config, TASK_INPUTS)  # type: ignore[arg-type]
    rules = catalog_rules([*calculator.config.guardrails, "HAIP-Profanity"])
    guarded = RunInput(
        messages=question.messages,
        guardrails=rules,
        guard_window=int(settings.GUARDRAIL_WINDOW_CHARS),
    )
    tool_steps = ("model_call", "tool_call", "model_call")
    return [
        Workload("tool", calculator, question, TOOL_ANSWER, tool_steps),
        Workload("task", task, RunInput(inputs=inputs), TASK_ANSWER, ("model_call",)),
        Workload("guarded", calculator, guarded, TOOL_ANSWER, tool_steps),
    ]


# ---------------------------------------------------------------- measuring


@dataclass
class Block:
    """One side's runs of one round."""

    cpu: float = 0.0  # seconds, run and JSON
    json_cpu: float = 0.0  # seconds of json.dumps(trace.steps), the records built included
    runs: int = 0
    each: list[float] = field(default_factory=list)  # seconds, run by run
    steps: int = 0
    json_bytes: int = 0

    def us(self, seconds: float) -> float:
        return seconds / self.runs * 1e6


@dataclass
class Result:
    workload: Workload
    blocks: dict[str, list[Block]] = field(default_factory=lambda: {s: [] for s in SIDES})
    wrong: list[str] = field(default_factory=list)


async def one_run(workload: Workload, trace: Trace, number: int, block: Block) -> str | None:
    """One run timed as the recorder would end it; what is wrong with it, if anything."""
    meter = Meter(trace=trace)
    started = time.process_time()
    events: list[Event] = [
        event
        async for event in run(
            workload.spec, workload.run_input, response_id=f"resp_bench{number}", meter=meter
        )
    ]
    ran = time.process_time()
    written = json.dumps(trace.steps)
    ended = time.process_time()
    block.cpu += ended - started
    block.each.append(ended - started)
    block.json_cpu += ended - ran
    block.runs += 1
    block.json_bytes += len(written)
    last = events[-1]
    if not isinstance(last, ResponseCompleted) or last.answer != workload.answer:
        return f"{workload.name}: the run ended with {last!r}"
    steps = json.loads(written)
    block.steps += len(steps)
    wanted = () if isinstance(trace, UnrecordedTrace) else workload.steps
    if tuple(s["type"] for s in steps) != wanted or any(s["status"] != "completed" for s in steps):
        return f"{workload.name}: steps {steps!r}, wanted types {wanted!r}"
    return None


async def round_of(workload: Workload, runs: int, result: Result) -> dict[str, Block]:
    """`runs` runs a side, the sides alternating run by run (AB BA AB ...), so that both
    meet the same drift, and each side goes first in half the pairs."""
    blocks = {side: Block() for side in SIDES}
    order = list(SIDES)
    gc.collect()
    for number in range(runs):
        for side in order if number % 2 == 0 else order[::-1]:
            wrong = await one_run(workload, SIDES[side](), number, blocks[side])
            if wrong is not None and len(result.wrong) < 5:
                result.wrong.append(wrong)
    return blocks


async def measure(workload: Workload, *, rounds: int, runs: int, warmup: int) -> Result:
    result = Result(workload)
    await round_of(workload, warmup, result)
    for _ in range(rounds):
        for side, block in (await round_of(workload, runs, result)).items():
            result.blocks[side].append(block)
    return result


@contextmanager
def no_database() -> Iterator[list[str]]:
    """Any attempt to open a database connection, on any thread, fails and is counted."""
    attempts: list[str] = []
    original = BaseDatabaseWrapper.ensure_connection

    def refused(self: BaseDatabaseWrapper) -> None:
        attempts.append(self.alias)
        raise RuntimeError("bench/trace_cost.py runs without a database")

    BaseDatabaseWrapper.ensure_connection = refused  # type: ignore[method-assign]
    try:
        yield attempts
    finally:
        BaseDatabaseWrapper.ensure_connection = original  # type: ignore[method-assign]


# ---------------------------------------------------------------- figures


@dataclass(frozen=True)
class Figures:
    p50: float  # µs/run, the median of the rounds' means
    low: float  # µs/run, the lowest round
    run_p50: float  # µs, the median run of all rounds (GC pauses and preemptions left out)
    json_p50: float  # µs/run of json.dumps(trace.steps), the median of the rounds
    runs: int
    steps: float  # a run
    json_bytes: float  # a run


def figures(blocks: list[Block]) -> Figures:
    runs = sum(b.runs for b in blocks)
    return Figures(
        p50=median(b.us(b.cpu) for b in blocks),
        low=min(b.us(b.cpu) for b in blocks),
        run_p50=median(t for b in blocks for t in b.each) * 1e6,
        json_p50=median(b.us(b.json_cpu) for b in blocks),
        runs=runs,
        steps=sum(b.steps for b in blocks) / runs,
        json_bytes=sum(b.json_bytes for b in blocks) / runs,
    )


def report(result: Result) -> tuple[float, float]:
    """Print the workload's table; (overhead %, µs/run): the medians over the rounds of
    each round's traced runs against the same round's untraced ones."""
    untraced = figures(result.blocks["untraced"])
    traced = figures(result.blocks["traced"])
    rounds = list(zip(result.blocks["traced"], result.blocks["untraced"], strict=True))
    ratios = sorted(t.cpu / t.runs / (u.cpu / u.runs) for t, u in rounds)
    extras = sorted(t.us(t.cpu) - u.us(u.cpu) for t, u in rounds)
    ratio, extra = median(ratios), median(extras)
    rows = []
    for side, f in (("untraced", untraced), ("traced", traced)):
        rows.append(
            [
                side,
                f.runs,
                f"{f.p50:.1f}",
                f"{f.low:.1f}",
                f"{f.run_p50:.1f}",
                f"{f.json_p50:.1f}",
                f"{f.steps:g}",
                f"{f.json_bytes:.0f}",
                "1.000" if side == "untraced" else f"{ratio:.3f}",
                "" if side == "untraced" else f"{(ratio - 1) * 100:+.1f} %",
                "" if side == "untraced" else f"{extra:+.1f}",
            ]
        )
    name = result.workload.name
    print(f"\n{name}: steps of a traced run: {', '.join(result.workload.steps)}")
    print(
        table(
            [
                "side",
                "runs",
                "CPU µs/run p50",
                "min",
                "median run",
                "of which steps→JSON µs",
                "steps/run",
                "JSON bytes",
                "ratio",
                "overhead",
                "µs/run",
            ],
            rows,
        )
    )
    pairs = [
        (t - u) * 1e6
        for traced_block, untraced_block in rounds
        for t, u in zip(traced_block.each, untraced_block.each, strict=True)
    ]
    print(
        f"rounds: ratio {ratios[0]:.3f} to {ratios[-1]:.3f}, "
        f"{extras[0]:+.1f} to {extras[-1]:+.1f} µs/run; median runs' ratio "
        f"{traced.run_p50 / untraced.run_p50:.3f}; adjacent runs, traced minus untraced: "
        f"median {median(pairs):+.1f} µs"
    )
    return (ratio - 1) * 100, extra


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run (under 10 s)")
    parser.add_argument("--rounds", type=int, help="rounds (default 10, --quick 4)")
    parser.add_argument("--runs", type=int, help="runs a side a round (default 300, --quick 100)")
    args = parser.parse_args()
    # The test settings: the offline model, no liveness thread. Nothing here reads the ORM.
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    import django

    django.setup()
    rounds = args.rounds or (4 if args.quick else 10)
    runs = args.runs or (100 if args.quick else 300)
    warmup = 20 if args.quick else 50
    print(machine())
    print(
        f"{rounds} rounds x {runs} runs a side (after {warmup} warm-up runs a side), "
        "sides alternating run by run; CPU: time.process_time() per run, "
        "json.dumps(trace.steps) included"
    )
    print(
        "p50, min: of the rounds' CPU per run; median run: of all runs; ratio, overhead: "
        "the median of the rounds' traced against the same round's untraced"
    )
    started = time.perf_counter()
    results = []
    with no_database() as attempts:
        for workload in workloads():
            results.append(asyncio.run(measure(workload, rounds=rounds, runs=runs, warmup=warmup)))
    overheads = {result.workload.name: report(result) for result in results}
    wrong = [w for result in results for w in result.wrong]
    print()
    for line in wrong:
        print(f"wrong: {line}")
    print(f"database connections attempted: {len(attempts)}")
    print(f"every run's answer and steps right: {'no' if wrong else 'yes'}")
    print(f"took {time.perf_counter() - started:.0f} s")
    print(
        "trace cost: "
        + ", ".join(
            f"{name} {pct:+.1f} % ({us:+.0f} µs/run)" for name, (pct, us) in overheads.items()
        )
    )
    return 1 if wrong or attempts else 0


if __name__ == "__main__":
    raise SystemExit(main())
