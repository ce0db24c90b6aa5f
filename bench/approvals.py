"""What a tool approval costs: a run that pauses for a person and is resumed, next to the
same run without the approval, and next to the cheapest run there is.

    .venv/bin/python bench/approvals.py [--quick] [--runs N] [--db shared|private]

One uvicorn process on a fake OpenAI model (tests/fakes, in this process) that calls
`multiply` when the conversation has no tool result yet and answers text once it has one
(an agent whose system prompt asks for it answers at once). Three rows, each `runs` runs,
`concurrency` at a time, in alternating halves so a busy machine's drift falls on all:

- plain:    POST invoke, tool without approval: 2 model calls, 1 tool call, one request;
- approved: the same tool with `requireApproval: "always"`: POST invoke (the run pauses
            `awaiting_approval`), then POST /v1/runs/{id}/approvals approving it (the same
            run resumes): the same 2 model calls and 1 tool call, over two requests;
- start:    POST invoke of an agent whose model answers at once: 1 model call, no tool.
            What one run costs to start and end, the yardstick of the issue's goal: a resume
            adds at most one run start's cost, and replays nothing.

Prints per run the server process's CPU, PostgreSQL's (every postgres process on the
machine: run nothing else against it), each HTTP call's latency percentiles, and the
ratios. Checks every run ended `completed` with exactly one tool call and the model
called exactly as often as said above; exits 1 otherwise. Asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from common import (
    INVOKE_REQUEST,
    ONE_TOOL_CONFIG,
    BenchData,
    Server,
    arguments,
    bench_data,
    cpu_seconds,
    machine,
    percentile,
    postgres_cpu,
    prepare,
    running,
    table,
)

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

AT_ONCE = "Answer at once, without tools."
GATED_CONFIG: dict[str, Any] = {
    **ONE_TOOL_CONFIG,
    "tools": [{**ONE_TOOL_CONFIG["tools"][0], "requireApproval": "always"}],
}
START_CONFIG: dict[str, Any] = {**ONE_TOOL_CONFIG, "systemPrompt": AT_ONCE}


@dataclass
class Phase:
    runs: int = 0
    server_cpu: float = 0.0
    pg_cpu: float = 0.0
    latencies: dict[str, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def add(self, other: Phase) -> None:
        self.runs += other.runs
        self.server_cpu += other.server_cpu
        self.pg_cpu += other.pg_cpu
        for name, values in other.latencies.items():
            self.latencies.setdefault(name, []).extend(values)
        self.failures += other.failures

    def per_run_ms(self, cpu: float) -> float:
        return cpu / self.runs * 1000 if self.runs else 0.0


def tool_then_answer() -> Any:
    """The fake model: a tool call first, text once the conversation holds a result."""
    from tests.fakes.openai import FakeOpenAI
    from tests.fakes.server import Call, Turn

    class ToolThenAnswer(FakeOpenAI):
        def next_response(self, recorded: Any) -> Any:
            with self._lock:
                self.requests.append(recorded)
            messages = recorded.body.get("messages", [])
            if any(
                m.get("role") == "system" and AT_ONCE in str(m.get("content")) for m in messages
            ):
                return Turn(text=["Hello."])
            if messages and messages[-1].get("role") == "tool":
                return Turn(text=["It is ", "15."])
            return Turn(calls=[Call("multiply", {"a": 3, "b": 5})])

    return ToolThenAnswer()


async def phase(
    client: httpx.AsyncClient,
    server: Server,
    data: BenchData,
    *,
    runs: int,
    concurrency: int,
    approve: bool,
) -> Phase:
    result = Phase(runs=runs)
    numbers = iter(range(runs))
    invoke = f"{server.url}/v1/agents/{data.agent_id}/versions/latest/invoke"

    def timed(name: str, started: float) -> None:
        result.latencies.setdefault(name, []).append(time.perf_counter() - started)

    async def worker(token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        for _ in numbers:
            started = time.perf_counter()
            answer = await client.post(invoke, json=INVOKE_REQUEST, headers=headers)
            timed("invoke", started)
            body = answer.json()
            if answer.status_code != 200:
                result.failures.append(f"invoke {answer.status_code} {answer.text[:200]}")
                continue
            if not approve:
                continue
            if body.get("status") != "awaiting_approval":
                result.failures.append(f"did not pause: {answer.text[:200]}")
                continue
            [asked] = body["approvalRequests"]
            decision = {"approvalRequestId": asked["approvalRequestId"], "decision": "approve"}
            run_id = answer.headers["X-Run-Id"]
            started = time.perf_counter()
            resumed = await client.post(
                f"{server.url}/v1/runs/{run_id}/approvals",
                json={"decisions": [decision]},
                headers=headers,
            )
            timed("approvals", started)
            if resumed.status_code != 200:
                result.failures.append(f"approvals {resumed.status_code} {resumed.text[:200]}")

    cpu, pg = cpu_seconds(server.pid), postgres_cpu()
    await asyncio.gather(*(worker(data.tokens[i % len(data.tokens)]) for i in range(concurrency)))
    result.server_cpu = cpu_seconds(server.pid) - cpu
    result.pg_cpu = postgres_cpu() - pg
    return result


async def measure(
    server: Server, agents: dict[str, BenchData], *, runs: int, warmup: int, concurrency: int
) -> dict[str, Phase]:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    phases = {name: Phase() for name in agents}
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        for name, data in agents.items():
            approve = name == "approved"
            await phase(client, server, data, runs=warmup, concurrency=concurrency, approve=approve)
        for _ in range(2):  # alternating halves
            for name, data in agents.items():
                approve = name == "approved"
                phases[name].add(
                    await phase(
                        client,
                        server,
                        data,
                        runs=runs // 2,
                        concurrency=concurrency,
                        approve=approve,
                    )
                )
    return phases


def checked(agents: dict[str, BenchData], model_calls: int, runs: int, warmup: int) -> list[str]:
    """What is wrong with what the runs recorded (nothing, when all went as said)."""
    from django.db import connection

    from agents.models import Run

    problems = []
    for name, data in agents.items():
        rows = list(Run.objects.filter(agent_id=data.agent_id).values_list("status", "steps"))
        statuses = {status for status, _ in rows}
        if len(rows) != runs + warmup or statuses != {"completed"}:
            problems.append(f"{name}: {len(rows)} runs, statuses {statuses}")
        wanted = 0 if name == "start" else 1
        tools = {sum(s["type"] == "tool_call" for s in steps) for _, steps in rows}
        if tools != {wanted}:
            problems.append(f"{name}: tool calls per run {tools}, not {wanted}")
    expected = (runs + warmup) * (2 + 2 + 1)
    if model_calls != expected:
        problems.append(f"the model was called {model_calls} times, not {expected}")
    connection.close()
    return problems


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="shared")
    parser.add_argument("--runs", type=int, default=0, help="timed runs of each row")
    args = parser.parse_args()
    runs, warmup, concurrency = (100, 10, 8) if args.quick else (600, 40, 8)
    if args.runs:
        runs = args.runs
    print(machine())
    db = prepare(args.db)
    try:
        fake = tool_then_answer()
        with fake:
            agents = {
                "plain": bench_data(callers=concurrency),
                "approved": bench_data(callers=concurrency, config=GATED_CONFIG),
                "start": bench_data(callers=concurrency, config=START_CONFIG),
            }
            env = {
                "DJANGO_SETTINGS_MODULE": "bench.settings",
                "LLM_OFFLINE": "false",
                "OPENAI_BASE_URL": fake.base_url,
                "OPENAI_API_KEY": "bench-key",
            }
            with running(Server(env)) as server:
                phases = asyncio.run(
                    measure(server, agents, runs=runs, warmup=warmup, concurrency=concurrency)
                )
                problems = server.problem_summary()
            model_calls = len(fake.requests)
        report(phases, runs=runs, warmup=warmup, concurrency=concurrency)
        for line in problems[:10]:
            print(f"  server log: {line}")
        wrong = [f for p in phases.values() for f in p.failures[:5]]
        wrong += checked(agents, model_calls, runs, warmup)
        for line in wrong:
            print(f"WRONG: {line}")
        return 1 if wrong else 0
    finally:
        db.close()


def report(phases: dict[str, Phase], *, runs: int, warmup: int, concurrency: int) -> None:
    ms = 1000.0
    print(f"\n{runs} timed runs each (after {warmup} warm-up), {concurrency} at a time")
    rows = []
    for name, p in phases.items():
        for call, values in p.latencies.items():
            rows.append(
                [
                    f"{name} {call}",
                    f"{percentile(values, 50) * ms:.1f}",
                    f"{percentile(values, 99) * ms:.1f}",
                ]
            )
    print(table(["call", "p50 ms", "p99 ms"], rows))
    print()
    print(
        table(
            ["run", "server CPU ms/run", "PostgreSQL CPU ms/run", "total ms/run"],
            [
                [
                    name,
                    f"{p.per_run_ms(p.server_cpu):.1f}",
                    f"{p.per_run_ms(p.pg_cpu):.1f}",
                    f"{p.per_run_ms(p.server_cpu + p.pg_cpu):.1f}",
                ]
                for name, p in phases.items()
            ],
        )
    )
    plain, approved, start = phases["plain"], phases["approved"], phases["start"]

    def total(p: Phase) -> float:
        return p.per_run_ms(p.server_cpu + p.pg_cpu)

    extra = total(approved) - total(plain)
    server = approved.per_run_ms(approved.server_cpu) / plain.per_run_ms(plain.server_cpu)
    print(f"\napproved / plain: {total(approved) / total(plain):.2f}x (server {server:.2f}x)")
    print(
        f"what the pause and resume add: {extra:.1f} ms a run = {extra / total(start):.2f} of a "
        f"run start ({total(start):.1f} ms; goal: at most 1)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
