"""What the streaming output guard costs: a 2,000-character streamed answer with and without
the five shipped guardrails, against the same fake model, on one uvicorn process.

    .venv/bin/python bench/guard_overhead.py [--quick] [--db shared|private] [--pause S]

Two agents, identical but for `guardrails`: none, or all five of the shipped catalog
(HAIP-Profanity, HAIP-Insults-High, HAIP-Insults-Low, HAIP-Hate-High: input and output;
HAIP-Prompt_attack-Medium: input only). Their model is bench/sse_fake.py with `--prose`:
2,000 characters of ordinary English (21 sentences) in 363 word-sized deltas, `--pause`
apart. POST .../versions/latest/invoke-stream one call at a time, guarded and unguarded
alternating, then 8 at a time in alternating blocks. For every call: time to the first
byte (the response.created line), to the first response.output_text.delta line, to the
last byte; the text of the deltas must be the fake's, exactly, for both agents.

The guard holds text until a sentence ends, so the guarded agent's first text cannot come
before the model has sent its first sentence and the whitespace after it. The unguarded
streams say when that was: the guard's added delay to first text beyond the first window
is the guarded median first-text time minus the unguarded median time at which the first
window was complete. Goals (from the issue): less than 5 ms, and less than 10 % on the
total. At concurrency 1 the fake also records when it wrote each delta, which times every
window from the model's write to the client's read, call by call. Prints figures; asserts
nothing about time.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from common import (
    ONE_TOOL_CONFIG,
    BenchData,
    Server,
    arguments,
    bench_data,
    cpu_seconds,
    machine,
    percentile,
    prepare,
    run_counts,
    running,
    start_sse_fake,
    stop_process,
    table,
)
from sse_fake import PROSE, prose_deltas

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

GUARDRAILS = [
    "HAIP-Profanity",
    "HAIP-Insults-High",
    "HAIP-Insults-Low",
    "HAIP-Hate-High",
    "HAIP-Prompt_attack-Medium",
]
QUESTION = "Tell me about the old lighthouse."
REQUEST = {"messages": [{"role": "user", "content": QUESTION}]}
PAUSE = 0.001
FIRST_TEXT_GOAL_MS = 5.0
TOTAL_GOAL = 0.10
CONCURRENT = 8
ROUNDS = 4  # at concurrency 8: this many blocks of each agent, alternating
WARM_UP = 3
AGENTS = ("unguarded", "guarded")

# Where the guard releases the model's text: (end of the window in PROSE, index of the
# delta that completed it, or None for what is left when the model's stream ends).
Plan = list[tuple[int, int | None]]


def window_plan(window: int) -> Plan:
    """The guard's own rule (release_point) applied to the fake's deltas: each window ends
    at the last sentence end the held text shows, once the whitespace after it has come
    (or at a word boundary past `window` characters); the rest goes at the end."""
    from agents.runtime.guard import release_point

    plan: Plan = []
    text, released = "", 0
    for index, delta in enumerate(prose_deltas()):
        text += delta
        cut = release_point(text[released:], window)
        if cut:
            released += cut
            plan.append((released, index))
    if released < len(text):
        plan.append((len(text), None))
    return plan


@dataclass
class Call:
    """One invoke-stream call; `t0` is time.monotonic() when it was sent, every other time
    is in seconds since then."""

    agent: str
    t0: float = 0.0
    first_byte: float = math.nan
    first_text: float = math.nan
    completed: float = math.nan  # the response.completed line
    last_byte: float = math.nan
    status: int = 0
    error: str = ""
    last_type: str = ""
    deltas: list[tuple[float, str]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(text for _, text in self.deltas)

    @property
    def exact(self) -> bool:
        return self.status == 200 and self.last_type == "response.completed" and self.text == PROSE

    def ends(self) -> list[int]:
        """Where each delta line ends in the text."""
        out, end = [], 0
        for _, text in self.deltas:
            end += len(text)
            out.append(end)
        return out

    def window_done(self, plan: Plan) -> float:
        """When the first window was complete in this (unguarded) stream."""
        index = plan[0][1]
        return self.deltas[index][0] if index is not None else self.completed


async def one_call(client: httpx.AsyncClient, url: str, token: str, agent: str) -> Call:
    call = Call(agent)
    headers = {"Authorization": f"Bearer {token}"}
    call.t0 = started = time.monotonic()
    try:
        async with client.stream("POST", url, json=REQUEST, headers=headers) as response:
            call.status = response.status_code
            if response.status_code != 200:
                call.error = (await response.aread()).decode(errors="replace")[:300]
            else:
                async for line in response.aiter_lines():
                    at = time.monotonic() - started
                    if math.isnan(call.first_byte):
                        call.first_byte = at
                    if not line:
                        continue
                    event = json.loads(line)
                    call.last_type = event["type"]
                    if event["type"] == "response.output_text.delta":
                        if math.isnan(call.first_text):
                            call.first_text = at
                        call.deltas.append((at, event["delta"]))
                    elif event["type"] == "response.completed":
                        call.completed = at
    except httpx.HTTPError as exc:
        call.error = repr(exc)
    call.last_byte = time.monotonic() - started
    return call


@dataclass
class Agents:
    urls: dict[str, str]
    tokens: list[str]


@dataclass
class Phase:
    """The calls of one concurrency, by agent and in the order they were sent, and the
    server's CPU time they took."""

    concurrency: int
    calls: dict[str, list[Call]] = field(default_factory=lambda: {a: [] for a in AGENTS})
    order: list[Call] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=lambda: dict.fromkeys(AGENTS, 0.0))
    wall: float = 0.0

    def add(self, call: Call) -> None:
        self.calls[call.agent].append(call)
        self.order.append(call)

    def cpu_ms(self, agent: str) -> float:
        calls = len(self.calls[agent])
        return self.cpu[agent] / calls * 1000 if calls else math.nan


async def sequential(server: Server, agents: Agents, count: int) -> Phase:
    """`count` calls of each agent one at a time, alternating (each pair's order too)."""
    phase = Phase(1)
    started = time.monotonic()
    async with httpx.AsyncClient(timeout=60) as client:
        for number in range(count):
            for agent in AGENTS if number % 2 == 0 else AGENTS[::-1]:
                token = agents.tokens[number % len(agents.tokens)]
                cpu = cpu_seconds(server.pid)
                phase.add(await one_call(client, agents.urls[agent], token, agent))
                phase.cpu[agent] += cpu_seconds(server.pid) - cpu
    phase.wall = time.monotonic() - started
    return phase


async def concurrent(server: Server, agents: Agents, count: int, concurrency: int) -> Phase:
    """`count` calls of each agent, `concurrency` at a time, in blocks of one agent (so
    that a block's server CPU is that agent's), ROUNDS blocks each, alternating."""
    phase = Phase(concurrency)
    per_block = max(concurrency, count // ROUNDS)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    started = time.monotonic()
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        for number in range(ROUNDS):
            for agent in AGENTS if number % 2 == 0 else AGENTS[::-1]:
                numbers = iter(range(per_block))

                async def worker(token: str, agent: str = agent, numbers: Any = numbers) -> None:
                    for _ in numbers:
                        phase.add(await one_call(client, agents.urls[agent], token, agent))

                cpu = cpu_seconds(server.pid)
                await asyncio.gather(*(worker(agents.tokens[i]) for i in range(concurrency)))
                phase.cpu[agent] += cpu_seconds(server.pid) - cpu
    phase.wall = time.monotonic() - started
    return phase


async def warm_up(agents: Agents) -> None:
    """A few calls of each first: the provider and the detectors are imported lazily."""
    async with httpx.AsyncClient(timeout=60) as client:
        for number in range(WARM_UP):
            for agent in AGENTS:
                call = await one_call(client, agents.urls[agent], agents.tokens[number], agent)
                if not call.exact:
                    raise RuntimeError(
                        f"the {agent} warm-up call failed: {call.status} {call.last_type} "
                        f"{call.error or call.text[:200]!r}"
                    )


def guard_cpu(window: int, repeat: int = 40) -> dict[str, float]:
    """CPU ms per call, in this process, of the runtime's guard alone over the fake's answer:
    the input check of the question and guard_output over the 363 deltas, with the
    guarded agent's rules as the server builds them, and with none."""
    from django.db import connection

    from agents.access.environments import DEFAULT_ENVIRONMENT
    from agents.llm.base import Usage
    from agents.models import Environment
    from agents.runtime.events import Event, ResponseCompleted, TextDelta
    from agents.runtime.guard import Guard, guard_output
    from agents.runtime.spec import Meter
    from guardrails.selectors import guardrail_rules

    environment = Environment.objects.get(name=DEFAULT_ENVIRONMENT)
    rules = guardrail_rules(names=GUARDRAILS, environment_id=environment.pk)
    connection.close()
    deltas = prose_deltas()

    async def model() -> Any:
        for delta in deltas:
            yield TextDelta(delta)
        yield ResponseCompleted(usage=Usage(), text=PROSE)

    async def answer(guard: Guard) -> list[Event]:
        if await guard.check([QUESTION], "input") is not None:
            raise RuntimeError("the guard blocked the benchmark's question")
        return [event async for event in guard_output(model(), guard, Meter())]

    async def measure(guard: Guard) -> float:
        events = await answer(guard)  # the first, untimed, checks the text
        text = "".join(e.text for e in events if isinstance(e, TextDelta))
        if text != PROSE:
            raise RuntimeError("the guard changed or blocked the benchmark's answer")
        started = time.process_time()
        for _ in range(repeat):
            await answer(guard)
        return (time.process_time() - started) / repeat * 1000

    return {
        "guarded": asyncio.run(measure(Guard(rules, window))),
        "unguarded": asyncio.run(measure(Guard((), window))),
    }


# ---------------------------------------------------------------- figures


def ms(values: Sequence[float], p: float) -> float:
    return percentile([v for v in values if not math.isnan(v)], p) * 1000


def p50(values: Sequence[float]) -> float:
    return ms(values, 50)


def plain(text: str) -> str:
    """A table without the trailing blanks of its empty cells."""
    return "\n".join(line.rstrip() for line in text.splitlines())


def met(ok: bool) -> str:
    return "met" if ok else "NOT met"


PARTS = ("first", "middle", "last")


def part_of(k: int, plan: Plan) -> str:
    return "first" if k == 0 else "last" if plan[k][1] is None else "middle"


def transits(
    calls: Sequence[Call], sent: Sequence[Sequence[float]], plan: Plan
) -> tuple[dict[str, dict[str, list[float]]], int]:
    """For each window of each call: from the model's write of the delta that completed it
    ([DONE] for the last) to the client's read of the window (guarded) or of that delta
    (unguarded; the response.completed line for the last). And how many calls could not be
    matched (a stream not exact, or cut into other windows)."""
    out: dict[str, dict[str, list[float]]] = {a: {p: [] for p in PARTS} for a in AGENTS}
    ends = [end for end, _ in plan]
    unmatched = 0
    for call, written in zip(calls, sent, strict=True):
        if not call.exact or len(written) != len(prose_deltas()) + 4:
            unmatched += 1
            continue
        if call.agent == "guarded" and call.ends() != ends:
            unmatched += 1
            continue
        for k, (_, index) in enumerate(plan):
            model_wrote = written[1 + index] if index is not None else written[-1]
            if call.agent == "guarded":
                read = call.deltas[k][0]
            else:
                read = call.deltas[index][0] if index is not None else call.completed
            out[call.agent][part_of(k, plan)].append(call.t0 + read - model_wrote)
    return out, unmatched


@dataclass
class Goals:
    first_text_ms: float
    total_ratio: float

    @property
    def first_text_ok(self) -> bool:
        return self.first_text_ms < FIRST_TEXT_GOAL_MS

    @property
    def total_ok(self) -> bool:
        return self.total_ratio - 1 < TOTAL_GOAL


def report(phase: Phase, plan: Plan, window: int, pause: float) -> Goals:
    u, g = phase.calls["unguarded"], phase.calls["guarded"]
    first_window = [c.window_done(plan) for c in u if c.exact]
    figures: list[tuple[str, Callable[[Call], float]]] = [
        ("first byte (response.created)", lambda c: c.first_byte),
        ("first text (first output_text.delta)", lambda c: c.first_text),
        ("response.completed line", lambda c: c.completed),
        ("last byte (total)", lambda c: c.last_byte),
    ]
    rows = []
    for name, get in figures:
        uv, gv = [get(c) for c in u], [get(c) for c in g]
        rows.append(
            [
                name,
                f"{p50(uv):.1f}",
                f"{ms(uv, 95):.1f}",
                f"{p50(gv):.1f}",
                f"{ms(gv, 95):.1f}",
                f"{p50(gv) - p50(uv):+.1f}",
            ]
        )
    done = [f"{p50(first_window):.1f}", f"{ms(first_window, 95):.1f}", "", "", ""]
    rows.insert(2, ["first window complete (unguarded)", *done])
    cpu_u, cpu_g = phase.cpu_ms("unguarded"), phase.cpu_ms("guarded")
    rows.append(["server CPU per call (mean)", f"{cpu_u:.1f}", "", f"{cpu_g:.1f}", ""])
    rows[-1].append(f"{cpu_g - cpu_u:+.1f}")
    lines_u = percentile([len(c.deltas) for c in u], 50)
    lines_g = percentile([len(c.deltas) for c in g], 50)
    rows.append(["delta lines per call (median)", str(lines_u), "", str(lines_g), "", ""])
    order = "one at a time, alternating" if phase.concurrency == 1 else "in alternating blocks"
    print(
        f"\nconcurrency {phase.concurrency}: {len(u)} unguarded and {len(g)} guarded calls, "
        f"{order}, {phase.wall:.1f} s; model: 2,000 characters in {len(prose_deltas())} "
        f"deltas {pause * 1000:g} ms apart; GUARDRAIL_WINDOW_CHARS={window}"
    )
    headers = ["ms", "unguarded p50", "p95", "guarded p50", "p95", "guarded - unguarded p50"]
    print(plain(table(headers, rows)))

    total = p50([c.last_byte for c in g]) / p50([c.last_byte for c in u])
    total_p95 = ms([c.last_byte for c in g], 95) / ms([c.last_byte for c in u], 95)
    first_text = p50([c.first_text for c in g])
    goals = Goals(first_text - p50(first_window), total)
    print(
        f"  total (last byte), guarded / unguarded: p50 {total:.3f} ({(total - 1) * 100:+.1f} %), "
        f"p95 {total_p95:.3f} (goal < +{TOTAL_GOAL * 100:.0f} %: {met(goals.total_ok)})"
    )
    print(
        f"  the guard's added delay to first text beyond the first window: {first_text:.1f} "
        f"- {p50(first_window):.1f} = {goals.first_text_ms:+.1f} ms "
        f"(goal < {FIRST_TEXT_GOAL_MS:g} ms: {met(goals.first_text_ok)})"
    )
    print(
        f"  server CPU, guarded - unguarded: {cpu_g - cpu_u:+.1f} ms per call "
        f"({len(plan)} windows of text and {len(prose_deltas())} deltas a call)"
    )
    return goals


def report_windows(phase: Phase, sent: Sequence[Sequence[float]], plan: Plan) -> None:
    found, unmatched = transits(phase.order, sent, plan)
    labels = {
        "first": "1 (the first sentence)",
        "middle": f"2-{len(plan) - 1} (each at a sentence end)",
        "last": f"{len(plan)} (the last sentence, at the model's [DONE])",
    }
    rows = []
    for part, label in labels.items():
        uv, gv = found["unguarded"][part], found["guarded"][part]
        if uv and gv:
            rows.append(
                [
                    label,
                    f"{p50(uv):.2f}",
                    f"{ms(uv, 95):.2f}",
                    f"{p50(gv):.2f}",
                    f"{ms(gv, 95):.2f}",
                    f"{p50(gv) - p50(uv):+.2f}",
                ]
            )
    print(
        "\n  each window, from the model's write of the delta that completed it (the whitespace"
        "\n  after a full stop) to the client's read; unguarded: that delta's own line"
    )
    headers = ["window", "unguarded p50 ms", "p95", "guarded p50 ms", "p95", "added by the guard"]
    print("  " + plain(table(headers, rows)).replace("\n", "\n  "))
    if unmatched:
        print(f"  calls left out (not exact, or cut into other windows): {unmatched}")
    pairs = list(zip(phase.order, sent, strict=True))
    model = {a: [w[-1] - w[0] for c, w in pairs if c.agent == a] for a in AGENTS}
    tail = {a: [c.t0 + c.last_byte - w[-1] for c, w in pairs if c.agent == a] for a in AGENTS}
    print(
        "  the model's own stream (the fake's first write to its [DONE]): "
        + ", ".join(f"{a} p50 {p50(model[a]):.1f}" for a in AGENTS)
        + " ms; from its [DONE] to the last byte: "
        + ", ".join(f"{a} p50 {p50(tail[a]):.1f}" for a in AGENTS)
        + " ms"
    )


def check(phases: Sequence[Phase], data: dict[str, BenchData], warm: int) -> bool:
    ok = True
    print()
    for agent in AGENTS:
        calls = [c for phase in phases for c in phase.calls[agent]]
        exact = sum(c.exact for c in calls)
        statuses = Counter(c.status for c in calls)
        runs = run_counts(data[agent].agent_id)
        fine = exact == len(calls) and runs.get("completed", 0) == len(calls) + warm
        ok = ok and fine
        print(
            f"{agent}: HTTP {dict(statuses)}; text exactly the model's (nothing lost, "
            f"reordered or changed): {exact}/{len(calls)}; runs {runs} "
            f"(calls {len(calls)} + {warm} warm-up)"
        )
        for reason, n in Counter(
            c.error[:160] or f"{c.last_type}: {c.text[:120]!r}" for c in calls if not c.exact
        ).most_common(3):
            print(f"  {n} x {reason}")
    print(f"every stream exact, one completed run each: {'yes' if ok else 'NO'}")
    return ok


# ---------------------------------------------------------------- set-up


def measure(*, pause: float, calls: int, calls_concurrent: int) -> bool:
    from django.conf import settings

    window = int(settings.GUARDRAIL_WINDOW_CHARS)
    plan = window_plan(window)
    data = {
        "unguarded": bench_data(callers=CONCURRENT, config=ONE_TOOL_CONFIG),
        "guarded": bench_data(
            callers=CONCURRENT, config={**ONE_TOOL_CONFIG, "guardrails": GUARDRAILS}
        ),
    }
    fake, fake_url = start_sse_fake("--prose", "--record", "--pause", str(pause))
    try:
        env = {
            "LLM_OFFLINE": "false",
            "OPENAI_BASE_URL": f"{fake_url}/v1",
            "OPENAI_API_KEY": "bench-key",
        }
        with running(Server(env)) as server:
            agents = Agents(
                {
                    agent: f"{server.url}/v1/agents/{d.agent_id}/versions/latest/invoke-stream"
                    for agent, d in data.items()
                },
                data["unguarded"].tokens,
            )
            asyncio.run(warm_up(agents))
            client_cpu = time.process_time()
            one = asyncio.run(sequential(server, agents, calls))
            many = asyncio.run(concurrent(server, agents, calls_concurrent, CONCURRENT))
            client_cpu = time.process_time() - client_cpu
            time.sleep(0.5)  # each run is saved after its last line
            problems = server.problem_summary()
        written = httpx.get(f"{fake_url}/calls", timeout=30).json()["calls"]
    finally:
        stop_process(fake)
    goals = report(one, plan, window, pause)
    # The fake's calls in order: the warm-up's, then the sequential ones, one by one.
    report_windows(one, written[2 * WARM_UP : 2 * WARM_UP + len(one.order)], plan)
    report(many, plan, window, pause)
    cpu = guard_cpu(window)
    print(
        f"\nthe guard alone, in this process (input check + guard_output over the 363 "
        f"deltas): {cpu['guarded']:.2f} ms CPU per call with the five rules, "
        f"{cpu['unguarded']:.2f} ms with none; "
        f"{(cpu['guarded'] - cpu['unguarded']) / len(plan):.2f} ms per window"
    )
    ok = check([one, many], data, WARM_UP)
    print(f"client CPU (this process) during the timed calls: {client_cpu:.1f} s")
    if problems:
        print("server log (each line counted, tracebacks' frames left out):")
        for line in problems[:10]:
            print(f"  {line}")
    print(
        f"\ngoals at concurrency 1: first text beyond the first window < "
        f"{FIRST_TEXT_GOAL_MS:g} ms: {met(goals.first_text_ok)} ({goals.first_text_ms:+.1f} ms); "
        f"total < +{TOTAL_GOAL * 100:.0f} %: {met(goals.total_ok)} "
        f"({(goals.total_ratio - 1) * 100:+.1f} %)"
    )
    return ok


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="shared")
    parser.add_argument(
        "--pause",
        type=float,
        default=PAUSE,
        help=f"seconds between the model's deltas (default {PAUSE})",
    )
    args = parser.parse_args()
    calls, calls_concurrent = (30, 32) if args.quick else (120, 200)
    print(machine())
    db = prepare(args.db)
    try:
        ok = measure(pause=args.pause, calls=calls, calls_concurrent=calls_concurrent)
    finally:
        db.close()
    print(f"done; {machine()}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
