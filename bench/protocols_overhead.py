"""What each protocol costs: one agent version served by invoke, invoke-stream, respond,
chat/completions (per agent, and by `model` at /v1/chat/completions and /v1/openai),
process, the MCP server's tools/call and A2A's message/send and message/stream, on one
uvicorn server with the offline model.

    .venv/bin/python bench/protocols_overhead.py [--quick] [--db private|shared] [--routes A,B]

One runtime produces the events; each route only encodes them (JSON, NDJSON, SSE) and
parses its own request body. Two messages: one that the offline model answers with text
and one that makes it call the agent's `multiply` tool. Every route with each message, and
the bare view of invoke_overhead (bench/urls.py), take turns in blocks (round-robin,
forward then backward), so drift on a shared machine falls on all alike. Prints figures;
asserts nothing about time. Exits 1 when an answer is wrong.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from common import (
    BenchData,
    Database,
    Server,
    arguments,
    bench_data,
    cpu_seconds,
    machine,
    percentile,
    prepare,
    run_counts,
    running,
    table,
)
from invoke_overhead import Load, connect_cost, load, sessions_opened

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

TEXT = "Say hello to the benchmark."
TOOL = "What is 3 x 5?"  # the offline model reads "x" between numbers as `multiply`
TOOL_MARK = b'"name":"multiply"'  # how every answer but a chat.completion shows the call


# ---------------------------------------------------------------- what an answer must be


def _lines(content: bytes) -> list[bytes]:
    return [line for line in content.split(b"\n") if line.strip()]


def _sse(content: bytes) -> list[bytes]:
    """The `data:` payloads of an SSE body, in order (comments left out)."""
    return [line[5:].strip() for line in _lines(content) if line.startswith(b"data:")]


def _invoke_text(content: bytes) -> str:
    body = json.loads(content)
    assert body["object"] == "response", "not a response object"
    last = body["output"][-1]
    assert last["type"] == "message", f"last output item a {last['type']}"
    assert last["status"] == "completed", f"last message {last['status']}"
    return str(last["content"][0]["text"])


def _ndjson_text(content: bytes) -> str:
    events = [json.loads(line) for line in _lines(content)]
    assert events[-1]["type"] == "response.completed", f"last line {events[-1]['type']}"
    return "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")


def _respond_text(content: bytes) -> str:
    last = json.loads(content)["messages"][-1]
    assert last["role"] == "assistant", f"last message from {last['role']}"
    return str(last["content"])


def _chat_text(content: bytes) -> str:
    body = json.loads(content)
    assert body["object"] == "chat.completion", "not a chat.completion"
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop", f"finish_reason {choice['finish_reason']}"
    return str(choice["message"]["content"])


def _chat_stream_text(content: bytes) -> str:
    data = _sse(content)
    assert data[-1] == b"[DONE]", "no data: [DONE] at the end"
    text = []
    for payload in data[:-1]:
        delta = json.loads(payload)["choices"][0]["delta"]
        if delta.get("role") != "tool" and delta.get("content"):
            text.append(delta["content"])
    return "".join(text)


def _process_text(content: bytes) -> str:
    body = json.loads(content)
    assert body["object"] == "response", "not a response object"
    assert body["status"] == "completed", f"status {body['status']}"
    return str(body["output"][-1]["content"][0]["text"])


def _mcp_result(content: bytes) -> dict[str, Any]:
    """The JSON-RPC result at the end of a tools/call's SSE answer."""
    last = json.loads(_sse(content)[-1])
    assert "result" in last, f"last message {last}"
    result: dict[str, Any] = last["result"]
    assert not result.get("isError"), f"an error result: {result['content']}"
    return result


def _mcp_text(content: bytes) -> str:
    return str(_mcp_result(content)["content"][0]["text"])


def _mcp_run_id(content: bytes) -> str | None:
    try:
        return str(_mcp_result(content)["_meta"]["agentbuilder/runId"])
    except (AssertionError, ValueError, LookupError):
        return None


def _process_stream_text(content: bytes) -> str:
    objects = [json.loads(payload) for payload in _sse(content)]
    last = objects[-1]
    assert last["object"] == "response", f"last event a {last['object']}"
    assert last["status"] == "completed", f"response {last['status']}"
    numbers = [o["sequence_number"] for o in objects]
    assert numbers == list(range(len(objects))), "sequence numbers with gaps"
    return "".join(o["text"] for o in objects if o["object"] == "content" and o.get("delta"))


# ---------------------------------------------------------------- routes


@dataclass(frozen=True)
class Route:
    name: str
    path: str  # after the version's URL; one starting with "/" is the server's own path
    body: Callable[[str, str], dict[str, Any]]  # (message, agent name)
    text: Callable[[bytes], str]  # the answer's final text; AssertionError when malformed
    shows_call: bool = True  # whether the answer carries the tool call
    headers: Callable[[str], dict[str, str]] | None = None  # (agent name) -> headers to add
    # The run's id from the answer's body, for a protocol whose answer has no X-Run-Id.
    run_id: Callable[[bytes], str | None] | None = None


def _messages(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def _input(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": text}]}]


def _a2a_text(content: bytes) -> str:
    task = json.loads(content)["result"]
    assert task["kind"] == "task", f"a {task['kind']}, not a task"
    assert task["status"]["state"] == "completed", f"task {task['status']['state']}"
    return "".join(p["text"] for p in task["artifacts"][0]["parts"] if p["kind"] == "text")


def _a2a_stream_text(content: bytes) -> str:
    updates = [json.loads(payload)["result"] for payload in _sse(content)]
    assert updates[0]["kind"] == "task", f"first update a {updates[0]['kind']}"
    last = updates[-1]
    assert last["kind"] == "status-update", f"last update a {last['kind']}"
    assert last["status"]["state"] == "completed", f"task {last['status']['state']}"
    text = ""  # the artifact as A2A assembles it: append adds, a chunk without it starts over
    for update in updates:
        if update["kind"] == "artifact-update":
            piece = "".join(p["text"] for p in update["artifact"]["parts"] if p["kind"] == "text")
            text = text + piece if update.get("append") else piece
    return text


def _a2a(method: str) -> Callable[[str, str], dict[str, Any]]:
    def body(text: str, agent: str) -> dict[str, Any]:
        part = {"kind": "text", "text": text}
        message = {"kind": "message", "messageId": "m-1", "role": "user", "parts": [part]}
        return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}

    return body


MCP_2025, MCP_2026 = "2025-11-25", "2026-07-28"


def _tools_call(text: str, agent: str, version: str = MCP_2025) -> dict[str, Any]:
    meta: dict[str, Any] = {"progressToken": 1}
    if version == MCP_2026:  # the per-request protocol: each request says who is calling
        meta["io.modelcontextprotocol/protocolVersion"] = version
        meta["io.modelcontextprotocol/clientCapabilities"] = {}
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": agent, "arguments": {"message": text}, "_meta": meta},
    }


def _mcp_headers(version: str) -> Callable[[str], dict[str, str]]:
    def headers(agent: str) -> dict[str, str]:
        sent = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version}
        if version == MCP_2026:  # the per-request protocol routes on headers that mirror the body
            sent |= {"Mcp-Method": "tools/call", "Mcp-Name": agent}
        return sent

    return headers


ROUTES = (
    Route("invoke", "invoke", lambda t, _: {"messages": _messages(t)}, _invoke_text),
    Route("invoke-stream", "invoke-stream", lambda t, _: {"messages": _messages(t)}, _ndjson_text),
    Route("respond", "respond", lambda t, _: {"messages": _messages(t)}, _respond_text),
    Route(
        "chat/completions",
        "chat/completions",
        lambda t, _: {"messages": _messages(t), "stream": False},
        _chat_text,
        shows_call=False,  # a chat.completion holds the final message only
    ),
    Route(
        "chat/completions stream",
        "chat/completions",
        lambda t, _: {"messages": _messages(t), "stream": True},
        _chat_stream_text,
    ),
    Route("process", "process", lambda t, _: {"input": _input(t), "stream": False}, _process_text),
    Route(
        "process stream",
        "process",
        lambda t, _: {"input": _input(t), "stream": True},
        _process_stream_text,
    ),
    # The MCP server's tools/call, SSE with the text as progress (a tool result holds the
    # answer only): on the SDK's 2025 transport (stateless, no initialize) and on the 2026
    # per-request protocol that the SDK's Client speaks by default.
    Route(
        "mcp tools/call 2025",
        "/v1/mcp",
        _tools_call,
        _mcp_text,
        shows_call=False,
        headers=_mcp_headers(MCP_2025),
        run_id=_mcp_run_id,
    ),
    Route(
        "mcp tools/call 2026",
        "/v1/mcp",
        lambda t, agent: _tools_call(t, agent, MCP_2026),
        _mcp_text,
        shows_call=False,
        headers=_mcp_headers(MCP_2026),
        run_id=_mcp_run_id,
    ),
    # The routes that name the agent in `model`: OpenAI's chat completions at the API's
    # root, and the OpenAI-compatible base (one assistant message, the tool call not shown).
    Route(
        "/v1/chat/completions",
        "/v1/chat/completions",
        lambda t, agent: {"model": agent, "messages": _messages(t), "stream": False},
        _chat_text,
        shows_call=False,
    ),
    Route(
        "/v1/openai",
        "/v1/openai/chat/completions",
        lambda t, agent: {"model": agent, "messages": _messages(t)},
        _chat_text,
        shows_call=False,
    ),
    # A2A (0.3's method names) at the agent's endpoint, by name: a task (its artifact, the
    # call not shown), or its updates as SSE (the call as a working status update).
    Route("a2a message/send", "/v1/a2a/{name}", _a2a("message/send"), _a2a_text, False),
    Route("a2a message/stream", "/v1/a2a/{name}", _a2a("message/stream"), _a2a_stream_text),
)


@dataclass
class Case:
    """One route with one message; `expected` is native invoke's answer to the message."""

    route: Route
    message: str
    url: str
    agent: str  # its name, for a protocol that names the agent in the body
    expected: str = ""
    tool: bool = False

    @property
    def label(self) -> str:
        return f"{'tool' if self.tool else 'text'} {self.route.name}"

    def failure(self, content: bytes) -> str | None:
        try:
            text = self.route.text(content)
        except (AssertionError, ValueError, LookupError, TypeError) as exc:
            return f"malformed ({type(exc).__name__}: {exc}): {content[-300:]!r}"
        if text != self.expected:
            return f"answer {text!r}, expected {self.expected!r}"
        if self.tool and self.route.shows_call and TOOL_MARK not in content:
            return f"no multiply call in {content[:300]!r}"
        return None


@dataclass
class Measured(Load):
    """invoke_overhead's Load, plus the bytes received and the answers found wrong."""

    received: int = 0
    wrong: int = 0

    def add(self, other: Load) -> None:
        super().add(other)
        if isinstance(other, Measured):
            self.received += other.received
            self.wrong += other.wrong

    @property
    def failed(self) -> int:
        return self.not_ok + self.wrong


async def load_case(
    client: httpx.AsyncClient,
    server: Server,
    case: Case,
    tokens: list[str],
    total: int,
    concurrency: int,
) -> Measured:
    """invoke_overhead.load for any route: `total` POSTs of the case's body, `concurrency`
    at a time, each worker as its own caller; every answer read to its last byte and
    checked."""
    result = Measured(requests=total)
    numbers = iter(range(total))
    body = case.route.body(case.message, case.agent)

    async def worker(token: str) -> None:
        extra = case.route.headers(case.agent) if case.route.headers else {}
        headers = {"Authorization": f"Bearer {token}", **extra}
        for _ in numbers:
            started = time.perf_counter()
            try:
                response = await client.post(case.url, json=body, headers=headers)
            except httpx.HTTPError as exc:
                result.statuses[0] += 1
                result.failures.append(f"{case.label}: {exc!r}")
                continue
            result.latencies.append(time.perf_counter() - started)  # the whole body read
            result.statuses[response.status_code] += 1
            result.received += len(response.content)
            run_id = response.headers.get("X-Run-Id")
            if run_id is None and case.route.run_id is not None:
                run_id = case.route.run_id(response.content)
            if run_id:
                result.run_ids.add(run_id)
            if response.status_code != 200:
                result.failures.append(
                    f"{case.label}: {response.status_code} {response.text[:300]}"
                )
            elif (wrong := case.failure(response.content)) is not None:
                result.wrong += 1
                result.failures.append(f"{case.label}: {wrong}")

    cpu, started = cpu_seconds(server.pid), time.perf_counter()
    await asyncio.gather(*(worker(tokens[i % len(tokens)]) for i in range(concurrency)))
    result.wall = time.perf_counter() - started
    result.server_cpu = cpu_seconds(server.pid) - cpu
    return result


# ---------------------------------------------------------------- the run


@dataclass(frozen=True)
class Sizes:
    rounds: int  # timed blocks per case
    block: int  # requests per block
    warmup: int  # requests per case before the timed rounds
    concurrency: int

    @property
    def total(self) -> int:
        return self.rounds * self.block


@dataclass
class Results:
    cases: list[Case]
    loads: dict[str, Measured]  # by case label
    bare: Load
    calls: int  # platform requests sent (samples and warm-up included)
    sent: int  # every request, the bare view's too
    answers: dict[bool, str]  # native invoke's text, by tool
    warmup_failures: list[str]


async def measure(server: Server, data: BenchData, sizes: Sizes, routes: frozenset[str]) -> Results:
    base = f"{server.url}/v1/agents/{data.agent_id}/versions/latest"
    bare_url = f"{server.url}/bench/bare"
    limits = httpx.Limits(
        max_connections=sizes.concurrency, max_keepalive_connections=sizes.concurrency
    )
    calls = 0
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        headers = {"Authorization": f"Bearer {data.tokens[0]}"}
        agent = await client.get(f"{server.url}/v1/agents/{data.agent_id}", headers=headers)
        name = str(agent.raise_for_status().json()["name"])
        cases = [
            Case(
                route,
                message,
                _url(server.url, base, route.path.format(name=name)),
                name,
                tool=message == TOOL,
            )
            for message in (TEXT, TOOL)
            for route in ROUTES
            if route.name in routes
        ]
        # Native invoke's answer to each message is what every protocol must say.
        answers: dict[bool, str] = {}
        samples: dict[bool, dict[str, Any]] = {}
        for case in cases:
            if case.route.name == "invoke":
                response = await client.post(
                    case.url, json=case.route.body(case.message, name), headers=headers
                )
                response.raise_for_status()
                calls += 1
                samples[case.tool] = response.json()
                answers[case.tool] = _invoke_text(response.content)
            case.expected = answers[case.tool]
        called = [i for i in samples[True]["output"] if i["type"] == "function_call"]
        if [c["name"] for c in called] != ["multiply"] or any(
            i["type"] == "function_call" for i in samples[False]["output"]
        ):
            raise RuntimeError(f"the offline model did not answer as expected: {samples}")
        # The bare view sends native invoke's answer to the text message back.
        (await client.put(bare_url, json=samples[False])).raise_for_status()

        async def block(case: Case | None, n: int) -> Load:
            if case is None:
                return await load(client, server, bare_url, data.tokens, n, sizes.concurrency)
            return await load_case(client, server, case, data.tokens, n, sizes.concurrency)

        order: list[Case | None] = [*cases, None]
        warm = [await block(case, sizes.warmup) for case in order]
        calls += sizes.warmup * len(cases)
        loads = {case.label: Measured() for case in cases}
        bare = Load()
        warmup_failures = [f for w in warm for f in w.failures]
        for number in range(sizes.rounds):
            # Forward, then backward: a drift that is linear in time falls on all alike.
            for item in order if number % 2 == 0 else order[::-1]:
                result = await block(item, sizes.block)
                (bare if item is None else loads[item.label]).add(result)
            calls += sizes.block * len(cases)
    sent = calls + sizes.warmup + sizes.total  # the bare view's
    return Results(cases, loads, bare, calls, sent, answers, warmup_failures)


def _url(server: str, base: str, path: str) -> str:
    return f"{server}{path}" if path.startswith("/") else f"{base}/{path}"


def report(results: Results, sizes: Sizes) -> int:
    ms = 1000.0
    bare = results.bare
    rows = []
    for case in results.cases:
        got = results.loads[case.label]
        native = results.loads[f"{'tool' if case.tool else 'text'} invoke"]
        rows.append(
            [
                case.label,
                f"{got.rate:.1f}",
                f"{got.rate / native.rate:.2f}",
                f"{got.rate / bare.rate:.3f}",
                f"{percentile(got.latencies, 50) * ms:.1f}",
                f"{percentile(got.latencies, 99) * ms:.1f}",
                f"{got.cpu_ms:.1f}",
                f"{got.cpu_ms / native.cpu_ms:.2f}",
                f"{got.received / got.requests:.0f}",
                str(got.failed),
            ]
        )
    rows.append(
        [
            "bare view (text invoke's body)",
            f"{bare.rate:.1f}",
            f"{bare.rate / results.loads['text invoke'].rate:.2f}",
            "1.000",
            f"{percentile(bare.latencies, 50) * ms:.1f}",
            f"{percentile(bare.latencies, 99) * ms:.1f}",
            f"{bare.cpu_ms:.1f}",
            f"{bare.cpu_ms / results.loads['text invoke'].cpu_ms:.2f}",
            "",
            str(bare.not_ok),
        ]
    )
    print(
        f"\n{sizes.total} timed requests per row ({sizes.rounds} blocks of {sizes.block}, "
        f"after {sizes.warmup} warm-up), concurrency {sizes.concurrency}, model local.demo-v1"
    )
    print(f"text: {TEXT!r} -> {results.answers[False]!r}")
    print(f"tool: {TOOL!r} -> multiply, then {results.answers[True]!r}")
    headers = [
        "message route",
        "req/s",
        "÷ invoke",
        "÷ bare",
        "p50 ms",
        "p99 ms",
        "CPU ms",
        "CPU ÷ invoke",
        "bytes",
        "failed",
    ]
    print(table(headers, rows))
    print(
        "(÷ invoke: against native invoke with the same message; latency until the last byte; "
        "CPU ms: the server process's CPU time per request, PostgreSQL's not in it; "
        "bytes: response body; failed: non-200 or wrong answers)"
    )
    failures = [f for load_ in results.loads.values() for f in load_.failures] + bare.failures
    for failure in failures[:10]:
        print(f"  failed: {failure}")
    if results.warmup_failures:
        print(f"failed in the warm-up: {len(results.warmup_failures)}")
        for failure in results.warmup_failures[:5]:
            print(f"  failed: {failure}")
    return len(failures) + len(results.warmup_failures)


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument(
        "--routes",
        default=",".join(route.name for route in ROUTES),
        help="the routes to measure, by name, comma-separated (native invoke, the baseline, "
        "always): e.g. 'chat/completions,/v1/openai' (default: every route)",
    )
    args = parser.parse_args()
    routes = frozenset({"invoke", *args.routes.split(",")})
    unknown = routes - {route.name for route in ROUTES}
    if unknown:
        parser.error(f"no such route: {', '.join(sorted(unknown))}")
    if args.quick:
        sizes = Sizes(rounds=2, block=32, warmup=16, concurrency=16)
    else:
        sizes = Sizes(rounds=6, block=100, warmup=32, concurrency=16)
    print(machine())
    started = time.perf_counter()
    db: Database = prepare(args.db)
    try:
        data = bench_data(callers=sizes.concurrency)
        env = {"DJANGO_SETTINGS_MODULE": "bench.settings", "LLM_OFFLINE": "true"}
        with running(Server(env)) as server:
            before = sessions_opened(db)
            client_cpu = time.process_time()
            results = asyncio.run(measure(server, data, sizes, routes))
            client_cpu = time.process_time() - client_cpu
            time.sleep(0.5)  # a closed session reaches the statistics when its backend exits
            sessions = sessions_opened(db) - before
            problems = server.problem_summary()
        failed = report(results, sizes)
        runs = run_counts(data.agent_id)
        written, completed = sum(runs.values()), runs.get("completed", 0)
        run_ids = set().union(*(load_.run_ids for load_ in results.loads.values()))
        timed = sizes.total * len(results.cases)
        print(
            f"\nrun rows written {written} (calls {results.calls}, completed {completed}, "
            f"distinct X-Run-Id {len(run_ids)}/{timed} timed); "
            f"PostgreSQL connections opened {sessions}"
        )
        if problems:
            print("server log (each line counted, tracebacks' frames left out):")
            for line in problems[:10]:
                print(f"  {line}")
        per_request = client_cpu * 1000 / results.sent
        print(f"this process (the client) CPU {per_request:.1f} ms per request")
        print(f"open+close of one PostgreSQL connection: {connect_cost(db) * 1000:.2f} ms")
        ok = failed == 0 and written == completed == results.calls and len(run_ids) == timed
        print(f"every answer 200 and right, one completed run per call: {'yes' if ok else 'NO'}")
    finally:
        db.close()
    print(f"done in {time.perf_counter() - started:.0f} s; {machine()}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
