"""What counting the metrics (/metrics, agents.runs.metrics) costs per invoke: the server's CPU
per POST .../invoke with METRICS_TOKEN set (every run counted into PROMETHEUS_MULTIPROC_DIR)
against the same server without it (nothing counted), in one run.

    .venv/bin/python bench/metrics_cost.py [--quick] [--db shared|private]

Two uvicorn processes on one database, the offline model (LLM_OFFLINE=true: the cheapest
model call there is, so the ratio is an upper bound of what a real model's invoke pays),
the one-tool agent of bench/common.py. Rounds alternate the two servers (AB BA ...), each
round a batch of invokes per server at concurrency 16; a round's CPU per invoke is the
server process's CPU over the batch divided by its invokes. Then one scrape of /metrics,
whose run count must equal the invokes made on the counting server. Prints figures;
asserts nothing about time; exits 1 if a response or the count is wrong.
"""

from __future__ import annotations

import asyncio
import secrets
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from statistics import median

from common import (
    INVOKE_REQUEST,
    BenchData,
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
from prometheus_client.parser import text_string_to_metric_families

SIDES = ("off", "on")


@dataclass
class Batch:
    requests: int = 0
    cpu: float = 0.0  # the server's seconds
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)

    @property
    def cpu_ms(self) -> float:
        return self.cpu / self.requests * 1000


async def batch(
    client: httpx.AsyncClient, server: Server, url: str, tokens: list[str], total: int
) -> Batch:
    result = Batch(requests=total)
    numbers = iter(range(total))

    async def caller(token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        for _ in numbers:
            started = time.perf_counter()
            response = await client.post(url, json=INVOKE_REQUEST, headers=headers)
            result.latencies.append(time.perf_counter() - started)
            result.statuses[response.status_code] += 1

    cpu = cpu_seconds(server.pid)
    await asyncio.gather(*(caller(token) for token in tokens))
    result.cpu = cpu_seconds(server.pid) - cpu
    return result


async def measure(
    servers: dict[str, Server], data: BenchData, *, rounds: int, total: int, warmup: int
) -> dict[str, list[Batch]]:
    path = f"/v1/agents/{data.agent_id}/versions/latest/invoke"
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)
    batches: dict[str, list[Batch]] = {side: [] for side in SIDES}
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        for side in SIDES:
            await batch(client, servers[side], servers[side].url + path, data.tokens, warmup)
        for number in range(rounds):
            for side in SIDES if number % 2 == 0 else SIDES[::-1]:
                server = servers[side]
                batches[side].append(
                    await batch(client, server, server.url + path, data.tokens, total)
                )
    return batches


def scraped_runs(server: Server, token: str, agent: str) -> tuple[float, float]:
    """The counting server's completed runs of the agent, and the scrape's seconds."""
    started = time.perf_counter()
    response = httpx.get(f"{server.url}/metrics", headers={"Authorization": f"Bearer {token}"})
    took = time.perf_counter() - started
    response.raise_for_status()
    runs = sum(
        sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
        if sample.name == "agentbuilder_runs_total"
        and sample.labels.get("agent") == agent
        and sample.labels.get("status") == "completed"
    )
    return runs, took


def report(batches: dict[str, list[Batch]]) -> None:
    ms = 1000.0
    ratios = sorted(
        on.cpu_ms / off.cpu_ms for on, off in zip(batches["on"], batches["off"], strict=True)
    )
    rows = []
    for side in SIDES:
        cpu = sorted(b.cpu_ms for b in batches[side])
        latencies = [t for b in batches[side] for t in b.latencies]
        rows.append(
            [
                side,
                sum(b.requests for b in batches[side]),
                f"{median(cpu):.2f}",
                f"{cpu[0]:.2f}",
                f"{cpu[-1]:.2f}",
                f"{percentile(latencies, 50) * ms:.1f}",
                f"{percentile(latencies, 90) * ms:.1f}",
                f"{percentile(latencies, 99) * ms:.1f}",
            ]
        )
    print(
        table(
            [
                "metrics",
                "invokes",
                "CPU ms/invoke p50",
                "min",
                "max",
                "latency p50 ms",
                "p90",
                "p99",
            ],
            rows,
        )
    )
    extra = median(
        (on.cpu_ms - off.cpu_ms) * 1000
        for on, off in zip(batches["on"], batches["off"], strict=True)
    )
    print(
        f"CPU per invoke, on against off, round by round: median ratio {median(ratios):.3f} "
        f"({(median(ratios) - 1) * 100:+.1f} %; {extra:+.0f} µs), rounds {ratios[0]:.3f} "
        f"to {ratios[-1]:.3f}"
    )


# The steps of the one-tool agent's run (docs/api.md#run-steps), as the recorder counts them.
STEPS = [
    {"type": "model_call", "model": "openai/gpt-4o-mini", "status": "completed",
     "latencyMs": 120, "tokensUsage": {"input_tokens": 60, "output_tokens": 12},
     "costUsd": 0.0000234},
    {"type": "tool_call", "name": "multiply", "status": "completed", "latencyMs": 1},
    {"type": "model_call", "model": "openai/gpt-4o-mini", "status": "completed",
     "latencyMs": 90, "tokensUsage": {"input_tokens": 80, "output_tokens": 9},
     "costUsd": 0.0000174},
]  # fmt: skip


def counting_cost(directory: str, times: int) -> float:
    """Seconds of CPU of agents.runs.metrics.run_counted for one run of STEPS, in this
    process, into `directory`: the whole of what a run pays, without the noise of a server."""
    import os

    from django.conf import settings

    os.environ["PROMETHEUS_MULTIPROC_DIR"] = settings.PROMETHEUS_MULTIPROC_DIR = directory
    settings.METRICS_TOKEN = secrets.token_urlsafe(32)
    from agents.runs.metrics import run_counted

    def once() -> None:
        run_counted(agent="bench", protocol="native", status="completed", seconds=0.3, steps=STEPS)

    once()
    started = time.process_time()
    for _ in range(times):
        once()
    return (time.process_time() - started) / times


def main() -> int:
    args = arguments(__doc__.splitlines()[0], db="shared").parse_args()
    rounds, total, warmup = (4, 200, 50) if args.quick else (10, 500, 200)
    print(machine())
    db = prepare(args.db)
    token = secrets.token_urlsafe(32)
    try:
        data = bench_data(callers=16)
        with tempfile.TemporaryDirectory(prefix="bench-metrics-") as directory:
            common = {
                "DJANGO_SETTINGS_MODULE": "bench.settings",
                "LLM_OFFLINE": "true",
                "PROMETHEUS_MULTIPROC_DIR": directory,
            }
            with (
                running(Server({**common, "METRICS_TOKEN": ""})) as off,
                running(Server({**common, "METRICS_TOKEN": token})) as on,
            ):
                servers = {"off": off, "on": on}
                batches = asyncio.run(
                    measure(servers, data, rounds=rounds, total=total, warmup=warmup)
                )
                from agents.models import Agent

                agent = Agent.objects.get(pk=data.agent_id).name
                counted, scrape = scraped_runs(on, token, agent)
            counting = counting_cost(directory, 2000 if args.quick else 20000)
    finally:
        db.close()
    print(f"\n{rounds} rounds x {total} invokes a server (after {warmup} warm-up), concurrency 16")
    report(batches)
    print(
        f"run_counted alone, in-process, one run of {len(STEPS)} steps: {counting * 1e6:.1f} µs CPU"
    )
    made = warmup + rounds * total
    statuses = sum((b.statuses for side in SIDES for b in batches[side]), Counter())
    print(
        f"scrape: {counted:.0f} completed runs counted, {made} invoked on the counting "
        f"server; one scrape took {scrape * 1000:.1f} ms; statuses {dict(statuses)}"
    )
    ok = counted == made and set(statuses) == {200}
    print(f"every response 200 and every run counted: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
