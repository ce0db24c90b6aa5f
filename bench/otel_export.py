"""What exporting a run's spans costs an invoke (issue 33, "Tests and measures"): CPU per
invoke of a server exporting over OTLP/HTTP to a receiver on loopback, against one that
does not, in one run.

    .venv/bin/python bench/otel_export.py [--quick] [--db private|shared]

Two uvicorn processes on one database, alike but for OTEL_EXPORTER_OTLP_ENDPOINT: `off`
has none (no SDK set up), `on` exports to tests/fakes' OtlpReceiver in this process, which
decodes every ExportTraceServiceRequest as a collector does (its CPU is this process's,
not the servers'). The agent is a one-tool agent on tests/fakes' FakeOpenAI that calls
`multiply`, then answers: four spans a run (invoke_agent, chat, execute_tool, chat).
Non-streamed invokes, 16 at a time, in rounds of one block per side, the order reversed
every other round so drift on a shared machine falls on both alike. After each `on`
block the bench waits until the receiver holds every span of it (the exporter's batch
thread is the server's CPU too), then reads the server's
CPU. Prints CPU per invoke of
each side, their ratio (goal <= 1.03) and its spread over the rounds, p50 and p99
latency, and the spans received. Exits 1 on a non-200 answer or a span missing; asserts
nothing about time.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from common import (
    INVOKE_REQUEST,
    ONE_TOOL_CONFIG,
    Server,
    arguments,
    bench_data,
    cpu_seconds,
    machine,
    percentile,
    prepare,
    running,
    table,
)

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

SPANS_A_RUN = 4


def fake_model() -> Any:
    """FakeOpenAI that calls `multiply` first, and answers once it has the result."""
    from tests.fakes.openai import FakeOpenAI
    from tests.fakes.server import Call, Turn

    class ToolThenAnswer(FakeOpenAI):
        def next_response(self, recorded: Any) -> Any:
            messages = recorded.body.get("messages", [])
            if messages and messages[-1].get("role") == "tool":
                return Turn(text=["It is ", "15."], usage=(200, 20))
            return Turn(calls=[Call("multiply", {"a": 3, "b": 5})], usage=(180, 10))

    return ToolThenAnswer()


@dataclass
class Load:
    requests: int = 0
    server_cpu: float = 0.0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    rounds: list[float] = field(default_factory=list)  # CPU ms an invoke, each round

    @property
    def cpu_ms(self) -> float:
        return self.server_cpu / self.requests * 1000 if self.requests else 0.0


async def block(
    client: httpx.AsyncClient, url: str, tokens: list[str], total: int, concurrency: int
) -> Load:
    result = Load(requests=total)
    numbers = iter(range(total))

    async def worker(token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        for _ in numbers:
            started = time.perf_counter()
            try:
                response = await client.post(url, json=INVOKE_REQUEST, headers=headers)
            except httpx.HTTPError as exc:
                result.statuses[0] += 1
                result.failures.append(repr(exc))
                continue
            result.latencies.append(time.perf_counter() - started)
            result.statuses[response.status_code] += 1
            if response.status_code != 200:
                result.failures.append(f"{response.status_code} {response.text[:300]}")

    await asyncio.gather(*(worker(tokens[i % len(tokens)]) for i in range(concurrency)))
    return result


async def measure(
    servers: dict[str, Server],
    receiver: Any,
    agent_id: str,
    tokens: list[str],
    *,
    rounds: int,
    per_block: int,
    warmup: int,
    concurrency: int,
) -> dict[str, Load]:
    loads = {name: Load() for name in servers}
    exported = 0  # runs of `on` whose spans the receiver must hold
    limits = httpx.Limits(max_connections=2 * concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:

        async def side(name: str, total: int) -> Load:
            nonlocal exported
            server = servers[name]
            url = f"{server.url}/v1/agents/{agent_id}/versions/latest/invoke"
            cpu = cpu_seconds(server.pid)
            done = await block(client, url, tokens, total, concurrency)
            if name == "on":
                exported += total
                await asyncio.to_thread(receiver.wait_for, exported, "invoke_agent ")
            done.server_cpu = cpu_seconds(server.pid) - cpu
            return done

        for name in servers:
            await side(name, warmup)
        for number in range(rounds):
            for name in servers if number % 2 == 0 else reversed(servers):
                done = await side(name, per_block)
                total = loads[name]
                total.requests += done.requests
                total.server_cpu += done.server_cpu
                total.latencies += done.latencies
                total.statuses += done.statuses
                total.failures += done.failures
                total.rounds.append(done.cpu_ms)
    return loads


def report(loads: dict[str, Load], receiver: Any, runs_on: int) -> bool:
    ms = 1000.0
    off, on = loads["off"], loads["on"]
    ratios = [b / a for a, b in zip(off.rounds, on.rounds, strict=True)]
    print(
        table(
            ["side", "invokes", "CPU ms/invoke", "p50 ms", "p99 ms", "non-200"],
            [
                [
                    name,
                    load.requests,
                    f"{load.cpu_ms:.2f}",
                    f"{percentile(load.latencies, 50) * ms:.1f}",
                    f"{percentile(load.latencies, 99) * ms:.1f}",
                    load.requests - load.statuses[200],
                ]
                for name, load in loads.items()
            ],
        )
    )
    print("(CPU: the server process's, its exporter's batch thread included; PostgreSQL's not)")
    print(
        f"\nCPU on/off: {on.cpu_ms / off.cpu_ms:.3f} (goal <= 1.03); by round: "
        f"min {min(ratios):.3f}, median {percentile(ratios, 50):.3f}, max {max(ratios):.3f}"
    )
    names = Counter(span.name.split(" ")[0] for span in receiver.spans)
    print(
        f"spans received: {len(receiver.spans)} in {receiver.requests} OTLP requests "
        f"({dict(names)}); runs exported {runs_on}, expected {runs_on * SPANS_A_RUN} spans"
    )
    for load in loads.values():
        for failure in load.failures[:5]:
            print(f"  failed: {failure}")
    ok = all(load.requests == load.statuses[200] for load in loads.values())
    ok = ok and len(receiver.spans) == runs_on * SPANS_A_RUN
    print(f"every answer 200 and every span received: {'yes' if ok else 'NO'}")
    return ok


def main() -> int:
    args = arguments(__doc__.splitlines()[0], db="private").parse_args()
    rounds, per_block, warmup, concurrency = (4, 100, 20, 16) if args.quick else (10, 400, 100, 16)
    print(machine())
    db = prepare(args.db)
    from tests.fakes.otlp import OtlpReceiver

    try:
        with fake_model() as fake, OtlpReceiver() as receiver:
            base = {
                "DJANGO_SETTINGS_MODULE": "bench.settings",
                "LLM_OFFLINE": "false",
                "OPENAI_BASE_URL": fake.base_url,
                "OPENAI_API_KEY": "bench-key",
            }
            # The platform's batch settings (agents/telemetry/spans.py), as a deployment has them.
            exporting = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
            data = bench_data(callers=concurrency, config=ONE_TOOL_CONFIG)
            with (
                running(Server(base)) as off,
                running(Server({**base, **exporting})) as on,
            ):
                loads = asyncio.run(
                    measure(
                        {"off": off, "on": on},
                        receiver,
                        data.agent_id,
                        data.tokens,
                        rounds=rounds,
                        per_block=per_block,
                        warmup=warmup,
                        concurrency=concurrency,
                    )
                )
            print(f"\n{rounds} rounds of {per_block} invokes a side, concurrency {concurrency}")
            ok = report(loads, receiver, warmup + rounds * per_block)
    finally:
        db.close()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
