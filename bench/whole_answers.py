"""What a call nobody streams saves by asking its model for one answer: POST .../invoke (the
client waits for the whole answer) against a model that answers in 50 deltas, next to
.../invoke-stream (the client reads them) and the bare view, on one uvicorn server.

    .venv/bin/python bench/whole_answers.py [--quick] [--db shared|private]

The model is tests/fakes' FakeOpenAI in this process, answering every call with the same 50
deltas (or, asked for no stream, the same text in one `chat.completion`). The three take
turns in blocks, forward then backward. Run it on two commits to compare: before
docs/architecture.md#non-streamed-calls, invoke asked for a stream as invoke-stream does.
Prints figures and how the fake was asked; asserts nothing about time. Exits 1 when an
answer is wrong.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter

from common import (
    BenchData,
    Server,
    arguments,
    bench_data,
    machine,
    percentile,
    prepare,
    running,
    table,
)
from invoke_overhead import REQUEST, Load, load

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

DELTAS = tuple(f"<{n:02}> " for n in range(50))
ROWS = ("invoke", "invoke-stream", "bare")


async def measure(
    server: Server, data: BenchData, *, rounds: int, block: int, concurrency: int
) -> tuple[dict[str, Load], list[str]]:
    base = f"{server.url}/v1/agents/{data.agent_id}/versions/latest"
    urls = {"invoke": f"{base}/invoke", "invoke-stream": f"{base}/invoke-stream"}
    urls["bare"] = f"{server.url}/bench/bare"
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    wrong: list[str] = []
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        headers = {"Authorization": f"Bearer {data.tokens[0]}"}
        sample = await client.post(urls["invoke"], json=REQUEST, headers=headers)
        answer = sample.raise_for_status().json()
        if answer["output"][-1]["content"][0]["text"] != "".join(DELTAS):
            wrong.append(f"invoke answered {answer['output'][-1]}")
        streamed = await client.post(urls["invoke-stream"], json=REQUEST, headers=headers)
        lines = [json.loads(line) for line in streamed.raise_for_status().text.splitlines()]
        deltas = [x["delta"] for x in lines if x["type"] == "response.output_text.delta"]
        if "".join(deltas) != "".join(DELTAS):
            wrong.append(f"invoke-stream answered {deltas}")
        (await client.put(urls["bare"], json=answer)).raise_for_status()
        loads = {row: Load() for row in ROWS}
        for row in ROWS:  # warm
            await load(client, server, urls[row], data.tokens, block // 2, concurrency)
        for number in range(rounds):
            for row in ROWS if number % 2 == 0 else ROWS[::-1]:
                result = await load(client, server, urls[row], data.tokens, block, concurrency)
                loads[row].add(result)
    return loads, wrong


def main() -> int:
    args = arguments(__doc__.splitlines()[0], db="private").parse_args()
    rounds, block, concurrency = (2, 64, 16) if args.quick else (6, 200, 16)
    print(machine())
    started = time.perf_counter()
    db = prepare(args.db)
    from tests.fakes.openai import FakeOpenAI
    from tests.fakes.server import Turn

    try:
        data = bench_data(callers=concurrency)
        with FakeOpenAI() as fake:
            fake.fallback = Turn(text=DELTAS, usage=(120, 50))
            env = {
                "DJANGO_SETTINGS_MODULE": "bench.settings",
                "LLM_OFFLINE": "false",
                "OPENAI_BASE_URL": fake.base_url,
                "OPENAI_API_KEY": "bench-key",
            }
            with running(Server(env)) as server:
                loads, wrong = asyncio.run(
                    measure(server, data, rounds=rounds, block=block, concurrency=concurrency)
                )
            asked = Counter(
                "a stream" if r.body.get("stream") else "one answer" for r in fake.requests
            )
    finally:
        db.close()
    ms, bare = 1000.0, loads["bare"]
    rows = [
        [
            row,
            f"{got.rate:.1f}",
            f"{percentile(got.latencies, 50) * ms:.1f}",
            f"{percentile(got.latencies, 99) * ms:.1f}",
            f"{got.cpu_ms:.2f}",
            f"{got.cpu_ms / bare.cpu_ms:.2f}",
            str(got.not_ok),
        ]
        for row, got in loads.items()
    ]
    print(
        f"\n{rounds * block} timed requests per row ({rounds} blocks of {block}), "
        f"concurrency {concurrency}, FakeOpenAI answering {len(DELTAS)} deltas"
    )
    print(table(["route", "req/s", "p50 ms", "p99 ms", "CPU ms", "CPU ÷ bare", "failed"], rows))
    invoke, stream = loads["invoke"], loads["invoke-stream"]
    print(f"invoke's CPU ÷ invoke-stream's: {invoke.cpu_ms / stream.cpu_ms:.2f}")
    print(f"the fake was asked for: {dict(asked)}")
    failures = [f for got in loads.values() for f in got.failures] + wrong
    for failure in failures[:10]:
        print(f"  failed: {failure}")
    print(f"done in {time.perf_counter() - started:.0f} s; {machine()}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
