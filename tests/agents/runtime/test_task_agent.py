"""A task agent's prompt template, rendered within bounds (agents.templating): no database,
no model. Each refusal is checked to come before the big allocation, with tracemalloc."""

from __future__ import annotations

import asyncio
import tracemalloc
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import jinja2
import pytest

from agents.configs import TaskAgentConfig
from agents.runtime.depth import CallDepth
from agents.runtime.spec import AgentSpec, Meter, RunFailure, RunInput
from agents.runtime.task_agent import (
    TaskInputError,
    prepare_inputs,
    run_task_agent,
    run_task_nested,
)
from agents.runtime.tools.base import ToolFailure
from agents.templating import TemplateLimitError, TemplateLimits, render

LIMITS = TemplateLimits()
# The default limits with a clock no render here comes near (the product keeps its clock as
# a safety net): what stops these renders is a counted limit (characters, steps, bits),
# checked before the allocation, which a busy machine reaches no later than a quiet one. A
# render the counts failed to stop would run into this clock and fail on its message.
COUNTED = TemplateLimits(max_seconds=300)
STEPS = COUNTED.max_steps

# Each one asks for gigabytes, or for hours, in its own way; the last item is a regex.
OVER_LIMIT = {
    "repeated input": ("{{ name * 100000000 }}", {"name": "x"}, "repeating a text"),
    "range": ("{% for i in range(n) %}{% endfor %}", {"n": 10**9}, r"range\(\) of more than"),
    "nested loops": (
        "{% for i in range(n) %}{% for j in range(n) %}{% endfor %}{% endfor %}",
        {"n": 100_000},
        "more than 100000 loop iterations",
    ),
    "power": ("{{ n ** 100000 }}", {"n": 2}, "power would be over 4096 bits"),
    "squaring": (
        "{% set ns = namespace(n=3) %}{% for i in range(64) %}{% set ns.n = ns.n * ns.n %}"
        "{% endfor %}",
        {},
        "number would be over 4096 bits",
    ),
    "doubling with ~": (
        "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
        "{% endfor %}",
        {},
        "joined text",
    ),
    "doubling a list": (
        "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = [ns.l, ns.l] %}"
        "{% endfor %}{{ ns.l|string }}",
        {},
        "a value would be over",
    ),
    "captured block": (
        "{% set big %}{% for i in range(100000) %}{{ name }}{% endfor %}{% endset %}",
        {"name": "x" * 100},
        "wrote more than 1000000 characters",
    ),
    "literal text in a loop": (
        "{% for i in range(100000) %}" + "y" * 100 + "{% endfor %}",
        {},
        "wrote more than 1000000 characters",
    ),
    "center": ("{{ name|center(n) }}", {"name": "x", "n": 10**9}, "center's width"),
    "ljust": ("{{ name.ljust(n) }}", {"name": "x", "n": 10**9}, r"ljust\(\)'s width"),
    "printf width": ("{{ '%0*d' % (n, 1) }}", {"n": 10**9}, "'*' width"),
    "format width": ("{{ '{:>999999999}'.format(name) }}", {"name": "x"}, "format's width"),
    "replace": (
        "{{ name|replace('a', big) }}",
        {"name": "a" * 1000, "big": "b" * 10**5},
        "replaced",
    ),
    "join separator": ("{{ range(100000)|join(sep) }}", {"sep": "x" * 10**5}, "joined text"),
    "batch fill": ("{{ [1]|batch(n, 'x')|list }}", {"n": 10**9}, "batch's size"),
    "sum of lists": ("{{ [[1], [2]]|sum(start=[]) }}", {}, "adds numbers only"),
    "recursion": ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", {}, "too deeply"),
    "exponential macro": (
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
        "{{ f(40) }}",
        {},
        "more than 10000 loop iterations and calls",  # with STEPS_OF's limit
    ),
}


# Under tracemalloc a macro call costs about 0.1 ms: the step limit is tested at a tenth of
# its default, so that case takes a second of CPU rather than ten.
STEPS_OF = {"exponential macro": 10_000}


@pytest.mark.parametrize("case", OVER_LIMIT, ids=list(OVER_LIMIT))
def test_a_template_over_a_limit_stops_before_it_allocates(case: str) -> None:
    source, variables, message = OVER_LIMIT[case]
    tracemalloc.start()
    try:
        with pytest.raises(TemplateLimitError, match=message):
            render(source, variables, replace(COUNTED, max_steps=STEPS_OF.get(case, STEPS)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50 * 1024 * 1024, f"{peak / 2**20:.0f} MB at the peak"


class Weighed(Mapping[str, str]):
    """An empty mapping that counts how often its size is asked: how often it was weighed."""

    asked = 0

    def __len__(self) -> int:
        Weighed.asked += 1
        return 0

    def __getitem__(self, key: str) -> str:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())


@pytest.mark.parametrize("how", ["filter", "method"])
def test_a_join_over_the_limit_by_its_separators_alone_weighs_no_item(how: str) -> None:
    # Weighing 100,000 items is work a busy machine does slowly: the count of separators
    # times their length is over the limit without it.
    source = "{{ items|join(sep) }}" if how == "filter" else "{{ sep.join(items) }}"
    variables = {"items": [Weighed() for _ in range(100_000)], "sep": "x" * 100}
    Weighed.asked = 0
    with pytest.raises(TemplateLimitError, match="joined text"):
        render(source, variables, COUNTED)
    assert Weighed.asked == 0


def test_rendering_stops_at_its_wall_time() -> None:
    # The safety net: a render within every counted limit (100,000 iterations, each text
    # under a million characters) but long, stopped by the clock. Not how soon after the
    # deadline (a busy machine decides that): that it stopped, with the clock's message,
    # long before the end of its work.
    drawn = 0

    def items() -> Iterator[int]:
        nonlocal drawn
        for i in range(100_000):
            drawn += 1
            yield i

    source = "{% for i in items %}{{ (name * 100000)|length }}{% endfor %}"
    with pytest.raises(TemplateLimitError, match=r"longer than 0\.2 seconds"):
        render(source, {"name": "abcdefghij", "items": items()}, TemplateLimits(max_seconds=0.2))
    assert 0 < drawn < 100_000


def test_the_result_is_cut_off_past_the_character_limit() -> None:
    source = "{% for i in range(50) %}{{ name }}{% endfor %}"
    assert len(render(source, {"name": "x" * 100}, TemplateLimits(max_chars=5000))) == 5000
    with pytest.raises(TemplateLimitError, match="more than 4999 characters"):
        render(source, {"name": "x" * 100}, TemplateLimits(max_chars=4999))


def test_ordinary_templates_render_as_before() -> None:
    source = (
        "Dear {{ name|title }},\n"
        "{% for item in items %}{{ loop.index }}/{{ loop.length }} {{ item.sku }} x{{ item.n }}"
        "{% if not loop.last %}, {% endif %}{% endfor %}\n"
        "{% set total = items|sum(attribute='n') %}Total: {{ total * 2 }} {{ total ** 2 }}\n"
        "{% for k, v in meta|dictsort %}{{ k }}={{ v }};{% endfor %} {{ meta }} {{ tags }}\n"
        "{{ '%s-%05.1f' % (name, 3.14159) }} {{ '{}!'.format(name) }} {{ name ~ '?' }} "
        "{{ name.upper() }} {{ tags|join(', ') }} {{ ' pad '|center(9)|replace(' ', '.') }}\n"
        "{% macro b(t) %}**{{ t }}**{% endmacro %}{{ b(name) }} {{ none }} {{ flag }}\n"
    )
    variables = {
        "name": "ada",
        "items": [{"sku": "A1", "n": 2}, {"sku": "B2", "n": 3}],
        "meta": {"b": 2, "a": 1},
        "tags": ["x", "y"],
        "flag": True,
    }
    assert render(source, variables, LIMITS) == (
        "Dear Ada,\n"
        "1/2 A1 x2, 2/2 B2 x3\n"
        "Total: 10 25\n"
        'a=1;b=2; {"b": 2, "a": 1} ["x", "y"]\n'
        "ada-003.1 ada! ada? ADA x, y ...pad...\n"
        "**ada** null true\n"
    )


def test_methods_that_change_or_copy_in_bulk_are_refused() -> None:
    for source in (
        "{{ l.append(1) }}",
        "{{ name.translate({97: 'bb'}) }}",
        "{{ name.expandtabs(9) }}",
    ):
        with pytest.raises(jinja2.exceptions.SecurityError):
            render(source, {"l": [], "name": "a"}, LIMITS)


# ---------------------------------------------------------------- the task agent


def config(prompt: str, **properties: Any) -> TaskAgentConfig:
    schema = {"type": "object", "properties": {k: {"type": t} for k, t in properties.items()}}
    return TaskAgentConfig.model_validate(
        {"llmModelId": "local.demo-v1", "systemPrompt": prompt, "inputSchema": schema}
    )


def test_a_template_that_fails_on_its_inputs_is_an_input_error() -> None:
    with pytest.raises(TaskInputError, match="ZeroDivisionError"):
        prepare_inputs(config("{{ 1 / n }}", n="integer"), {"n": 0})


def spec_of(task: TaskAgentConfig) -> AgentSpec:
    # The render fails before any model call: no provider is needed.
    return AgentSpec(agent_id="a", agent_type="task", config=task, provider=None, model="m")  # type: ignore[arg-type]


SLOW = "{% for i in range(n) %}{{ (name * 20000)|length }}{% endfor %}"


def test_the_runtime_renders_off_the_event_loop_and_fails_with_template_limit(
    settings: Any,
) -> None:
    settings.TASK_TEMPLATE_MAX_SECONDS = 0.5
    task = config(SLOW, n="integer", name="string")

    async def main() -> tuple[RunFailure, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        beat = asyncio.create_task(ticker())
        try:
            inputs = RunInput(inputs={"n": 100_000, "name": "abcdefghij"})
            with pytest.raises(RunFailure) as failure:
                async for _ in run_task_agent(spec_of(task), inputs, Meter(), CallDepth()):
                    pass
        finally:
            beat.cancel()
        return failure.value, ticks

    failure, ticks = asyncio.run(main())
    assert failure.code == "template_limit"
    assert "longer than 0.5 seconds" in failure.message
    # On the event loop, the render would hold it from its first step to its failure: 0 or
    # 1 tick. Off it, 0.5 s of 10 ms sleeps make about 50 on a quiet machine; 5 leaves a
    # busy one (whose threads wait for a core) a tenth of that.
    assert ticks >= 5, "the event loop stood still while the template rendered"


def test_a_nested_task_agent_over_a_limit_is_a_tool_failure() -> None:
    task = config("{% for i in range(n) %}{% endfor %}", n="integer")
    with pytest.raises(ToolFailure, match="over a limit: range"):
        asyncio.run(run_task_nested(spec_of(task), {"n": 10**9}, Meter(), CallDepth(1)))
