"""agentbuilder's /v1/openai next to the servers people would pick instead: the LiteLLM
proxy and the LangGraph dev server, against one fake OpenAI-compatible upstream.

    .venv/bin/python bench/peers.py [--quick] [--rounds N] [--requests N] [--db private|shared]
    .venv/bin/python bench/peers.py --stack [--quick] [--rounds N] [--requests N]

The upstream is bench/sse_fake.py with no pause: 50 numbered deltas at once for
`stream: true`, the same text as one JSON answer for `stream: false`. The servers:

- agentbuilder as `make run` serves it (uvicorn with the Makefile's loop, HTTP protocol and
  lifespan; DEBUG off, no access log), a one-tool agent on the upstream, called by name on
  `POST /v1/openai/chat/completions`;
- the LiteLLM proxy (`litellm[proxy]`, pinned below), one worker, no database, the model
  `bench` routed to the upstream, on its `POST /v1/chat/completions`;
- the LangGraph dev server (`langgraph-cli[inmem]`, in-memory), a ReAct agent
  (`create_react_agent`, langchain-openai's ChatOpenAI on the upstream, the same one tool),
  on its stateless `POST /runs/wait` and `POST /runs/stream` (stream mode `messages-tuple`).

Each peer lives in a virtualenv of its own under var/bench/, installed from PyPI on the first
run and reused after; a peer that cannot be installed or started is left out with a line that
says why. Everything listens on 127.0.0.1; the peers' telemetry and tracing are off.

Rounds alternate (forward, then backward) over every server in both modes, non-streamed and
streamed: each block is `--requests` calls, 16 at a time, every answer checked (status, the
text, the number of deltas in a stream). Per block: the server's CPU (its process and its
children, psutil) and, for agentbuilder, its PostgreSQL's apart. The table: requests/s and CPU
ms per request (median of the rounds, with their range), p50/p99 latency (all calls), and the
ratios to each peer. The last line reads `peers: goals met` or `peers: goals missed: …` (the
goals of issue 35: docs in bench/README.md); the exit status is 1 when a goal is missed or an
answer was wrong.

`--stack` measures the served stack instead: agentbuilder alone under uvicorn's asyncio and
uvloop loops with the h11 and httptools protocols (agentbuilder.serving), alternated the same
way; uvloop and httptools come from requirements.txt or, when missing, from var/bench/stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import (
    ONE_TOOL_CONFIG,
    ROOT,
    BenchData,
    Database,
    Server,
    arguments,
    bench_data,
    free_port,
    machine,
    percentile,
    prepare,
    server_postgres_cpu,
    start_sse_fake,
    stop_process,
    table,
    tree_cpu,
)
from sse_fake import expected_text

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

DELTAS = 50
EXPECTED = expected_text(DELTAS)
QUESTION = "Count for the benchmark."
VENVS = ROOT / "var" / "bench"

# What each peer's virtualenv installs (pinned: the figures are of these releases). LiteLLM
# 1.108.8 and later pin proxy extras that PyPI does not serve to this Python.
LITELLM = ("litellm[proxy]==1.108.7",)
LANGGRAPH = ("langgraph-cli[inmem]==0.4.40", "langgraph-api==0.16.7", "langchain-openai==1.7.4")
PIP_INSTALL = ("-m", "pip", "install", "--quiet", "--disable-pip-version-check")
STACK = ("uvloop==0.23.0", "httptools==0.9.0")

# The peers see nothing of this process's environment but these (no DATABASE_URL, no keys),
# and these settings, which turn their telemetry and tracing off.
PASSED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
QUIET = {
    # LiteLLM: no usage telemetry, the model cost map from the package, not the network.
    "LITELLM_TELEMETRY": "False",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOG": "ERROR",
    # LangChain, LangSmith, LangGraph: no tracing, no analytics of the CLI.
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGCHAIN_CALLBACKS_BACKGROUND": "false",
    "DO_NOT_TRACK": "1",
}

# --------------------------------------------------------------------------- answers


def _sse_data(content: bytes) -> list[bytes]:
    return [line[5:].strip() for line in content.split(b"\n") if line.startswith(b"data:")]


def chat_answer(content: bytes) -> tuple[str, int]:
    body = json.loads(content)
    assert body["object"] == "chat.completion", f"a {body.get('object')}, not a chat.completion"
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop", f"finish_reason {choice['finish_reason']}"
    return str(choice["message"]["content"]), 0


def chat_stream(content: bytes) -> tuple[str, int]:
    data = _sse_data(content)
    assert data, "no data: lines"
    assert data[-1] == b"[DONE]", "no data: [DONE] at the end"
    pieces = []
    for payload in data[:-1]:
        chunk = json.loads(payload)
        assert "error" not in chunk, f"an error event {chunk['error']}"
        for choice in chunk["choices"]:
            if text := choice["delta"].get("content"):
                pieces.append(text)
    return "".join(pieces), len(pieces)


def graph_answer(content: bytes) -> tuple[str, int]:
    last = json.loads(content)["messages"][-1]
    assert last["type"] == "ai", f"last message a {last['type']}"
    return str(last["content"]), 0


def graph_stream(content: bytes) -> tuple[str, int]:
    events = re.findall(rb"event: *(\S+)\r?\ndata: *(.*)", content)
    assert events, "no SSE events"
    names = [name for name, _ in events]
    assert b"error" not in names, f"an error event {content[-300:]!r}"
    pieces = []
    for name, data in events:
        if name == b"messages":
            chunk, _ = json.loads(data)
            if chunk.get("type") == "AIMessageChunk" and chunk.get("content"):
                pieces.append(chunk["content"])
    return "".join(pieces), len(pieces)


# --------------------------------------------------------------------------- servers


@dataclass
class Target:
    """One server in one mode: where to POST, what, and how to read the answer."""

    server: str
    streamed: bool
    url: str
    body: dict[str, Any]
    read: Callable[[bytes], tuple[str, int]]  # (text, deltas); AssertionError when malformed
    headers: Callable[[int], dict[str, str]] = lambda _: {}  # by worker number

    @property
    def label(self) -> str:
        return f"{self.server} {'streamed' if self.streamed else 'non-streamed'}"


class Peer:
    """A server process of a peer, in its own process group (it may start children)."""

    name = ""

    def __init__(self) -> None:
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix=f"bench-{self.name}-", suffix=".log")  # noqa: SIM115
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def cpu(self) -> float:
        return tree_cpu(self.pid)

    def spawn(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(  # noqa: S603 - our own command line
            command,
            cwd=cwd,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, path: str, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"exited with {self.process.returncode}:\n{self.tail()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}{path}", timeout=2).status_code < 500:
                    return
            time.sleep(0.25)
        raise RuntimeError(f"did not answer within {timeout:.0f} s:\n{self.tail()}")

    def tail(self, lines: int = 12) -> str:
        return "\n".join(Path(self.log.name).read_text(errors="replace").splitlines()[-lines:])

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            # The whole group: a peer's server may run in a child of the command started.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


def venv(name: str, requirements: tuple[str, ...]) -> Path:
    """var/bench/<name>, a virtualenv with `requirements`, made once and reused while they
    stay the same; its python. RuntimeError (pip's last lines) when it cannot be made."""
    home = VENVS / name
    python = home / "bin" / "python"
    stamp = home / ".requirements"
    wanted = "\n".join(requirements)
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    print(f"installing {' '.join(requirements)} into {home.relative_to(ROOT)} (once) ...")
    shutil.rmtree(home, ignore_errors=True)
    made = subprocess.run(  # noqa: S603 - our own command line
        [sys.executable, "-m", "venv", str(home)], capture_output=True, text=True
    )
    if made.returncode == 0:
        made = subprocess.run(  # noqa: S603
            [str(python), *PIP_INSTALL, *requirements],
            capture_output=True,
            text=True,
        )
    if made.returncode != 0:
        lines = [ln for ln in (made.stdout + made.stderr).splitlines() if "ERROR" in ln]
        raise RuntimeError("; ".join(lines[-2:]) or f"pip exited with {made.returncode}")
    stamp.write_text(wanted)
    return python


def peer_env(**extra: str) -> dict[str, str]:
    env = {name: os.environ[name] for name in PASSED if name in os.environ}
    return {**env, **QUIET, **extra}


class LiteLLM(Peer):
    name = "LiteLLM"
    model = "bench"

    def start(self, upstream: str) -> None:
        python = venv("litellm", LITELLM)
        config = self.config = Path(self.log.name).with_suffix(".yaml")
        config.write_text(
            textwrap.dedent(f"""\
                model_list:
                  - model_name: {self.model}
                    litellm_params:
                      model: openai/{self.model}
                      api_base: {upstream}/v1
                      api_key: bench-upstream
                litellm_settings:
                  telemetry: false
                  drop_params: true
                general_settings:
                  disable_spend_logs: true
                """)
        )
        # It refuses to start without a master key; one made for this run.
        self.key = f"sk-bench-{secrets.token_hex(16)}"
        litellm = str(python.parent / "litellm")
        command = [litellm, "--config", str(config), "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--num_workers", "1"]
        self.spawn(command, peer_env(LITELLM_MASTER_KEY=self.key), VENVS)
        self.wait_ready("/health/liveliness")

    def close(self) -> None:
        super().close()
        if getattr(self, "config", None):
            self.config.unlink(missing_ok=True)

    def targets(self) -> list[Target]:
        url = f"{self.url}/v1/chat/completions"
        body = {"model": self.model, "messages": [{"role": "user", "content": QUESTION}]}
        key = {"Authorization": f"Bearer {self.key}"}
        return [
            Target(self.name, False, url, body, chat_answer, lambda _: key),
            Target(self.name, True, url, {**body, "stream": True}, chat_stream, lambda _: key),
        ]


# The LangGraph application: a ReAct agent with the one tool agentbuilder's agent has.
GRAPH = '''\
"""bench/peers.py's LangGraph agent: a ReAct agent on ChatOpenAI, one tool."""

import os

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent


@tool
def multiply(a: float, b: float) -> float:
    """Multiplies two numbers"""
    return a * b


model = ChatOpenAI(
    model="gpt-4o-mini", base_url=os.environ["BENCH_UPSTREAM"], api_key="bench-upstream"
)
graph = create_react_agent(
    model, [multiply], prompt="You are a helpful assistant with access to various tools."
)
'''


class LangGraph(Peer):
    name = "LangGraph"

    def start(self, upstream: str, concurrency: int) -> None:
        python = venv("langgraph", LANGGRAPH)
        app = Path(tempfile.mkdtemp(prefix="bench-langgraph-"))
        self.app = app
        (app / "agent.py").write_text(GRAPH)
        (app / "langgraph.json").write_text(
            json.dumps({"dependencies": ["."], "graphs": {"agent": "./agent.py:graph"}})
        )
        langgraph = str(python.parent / "langgraph")
        command = [langgraph, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--config", str(app / "langgraph.json")]
        # Its in-memory queue runs this many runs at once (10 by default): as many as the
        # load sends, so none waits for a slot.
        command += ["--n-jobs-per-worker", str(concurrency)]
        self.spawn(command, peer_env(BENCH_UPSTREAM=f"{upstream}/v1"), app)
        self.wait_ready("/ok")

    def targets(self) -> list[Target]:
        body = {
            "assistant_id": "agent",
            "input": {"messages": [{"role": "user", "content": QUESTION}]},
        }
        return [
            Target(self.name, False, f"{self.url}/runs/wait", body, graph_answer),
            Target(
                self.name,
                True,
                f"{self.url}/runs/stream",
                {**body, "stream_mode": "messages-tuple"},
                graph_stream,
            ),
        ]

    def close(self) -> None:
        super().close()
        if getattr(self, "app", None):
            shutil.rmtree(self.app, ignore_errors=True)


def make_run_options() -> list[str]:
    """The options of uvicorn that `make run` passes (the Makefile's run recipe), but for
    the address: the loop, the HTTP protocol, the lifespan, no proxy headers."""
    recipe = (ROOT / "Makefile").read_text().split("\nrun: setup", 1)[1]
    recipe = recipe.split("\n\n", 1)[0].replace("\\\n", " ")
    options = []
    for name in ("loop", "http", "lifespan"):
        if match := re.search(rf"--{name} (\S+)", recipe):
            options += [f"--{name}", match.group(1)]
    if "--no-proxy-headers" in recipe:
        options.append("--no-proxy-headers")
    return options


class Agentbuilder(Server):
    """uvicorn as `make run` starts it, or with `options` instead (--stack)."""

    def __init__(self, name: str, env: dict[str, str], options: list[str] | None = None) -> None:
        super().__init__(env)
        self.name = name
        self.options = make_run_options() if options is None else options

    def start(self, timeout: float = 60.0) -> None:
        command = [sys.executable, "-m", "uvicorn", "agentbuilder.asgi:application"]
        command += [*self.options, "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--no-access-log", "--log-level", "warning"]
        command += ["--timeout-graceful-shutdown", "5"]
        self.process = subprocess.Popen(  # noqa: S603 - our own command line
            command, cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT
        )
        self._wait_ready(timeout)

    def cpu(self) -> float:
        return tree_cpu(self.pid)

    def targets(self, data: BenchData, agent: str) -> list[Target]:
        url = f"{self.url}/v1/openai/chat/completions"
        messages = [{"role": "user", "content": QUESTION}]
        tokens = data.tokens

        def headers(worker: int) -> dict[str, str]:
            return {"Authorization": f"Bearer {tokens[worker % len(tokens)]}"}

        body = {"model": agent, "messages": messages}
        return [
            Target(self.name, False, url, body, chat_answer, headers),
            Target(self.name, True, url, {**body, "stream": True}, chat_stream, headers),
        ]


# --------------------------------------------------------------------------- load


@dataclass
class Block:
    requests: int = 0
    wall: float = 0.0
    cpu: float = 0.0  # the server's, seconds
    pg_cpu: float = 0.0  # agentbuilder's PostgreSQL's, seconds
    latencies: list[float] = field(default_factory=list)
    deltas: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.requests / self.wall if self.wall else 0.0

    @property
    def cpu_ms(self) -> float:
        return self.cpu / self.requests * 1000 if self.requests else 0.0

    @property
    def pg_ms(self) -> float:
        return self.pg_cpu / self.requests * 1000 if self.requests else 0.0


async def block(
    client: httpx.AsyncClient,
    target: Target,
    total: int,
    concurrency: int,
    cpu: Callable[[], float],
    pg: Callable[[], float],
) -> Block:
    """`total` POSTs to the target, `concurrency` at a time; each answer read to its last
    byte and checked."""
    result = Block(requests=total)
    numbers = iter(range(total))

    async def worker(number: int) -> None:
        headers = target.headers(number)
        for _ in numbers:
            started = time.perf_counter()
            try:
                response = await client.post(target.url, json=target.body, headers=headers)
            except httpx.HTTPError as exc:
                result.failures.append(f"{target.label}: {exc!r}")
                continue
            result.latencies.append(time.perf_counter() - started)
            if response.status_code != 200:
                result.failures.append(
                    f"{target.label}: {response.status_code} {response.text[:300]}"
                )
                continue
            try:
                text, deltas = target.read(response.content)
            except (AssertionError, ValueError, LookupError, TypeError) as exc:
                result.failures.append(
                    f"{target.label}: malformed ({exc}): {response.content[-300:]!r}"
                )
                continue
            if text != EXPECTED:
                result.failures.append(f"{target.label}: answer {text[:120]!r}")
            elif target.streamed and not 1 < deltas <= DELTAS:
                # Fewer than 50 only if a server joins deltas that came together; one is no stream.
                result.failures.append(f"{target.label}: {deltas} deltas")
            else:
                result.deltas.append(deltas)

    cpu_before, pg_before, started = cpu(), pg(), time.perf_counter()
    await asyncio.gather(*(worker(n) for n in range(concurrency)))
    result.wall = time.perf_counter() - started
    result.cpu, result.pg_cpu = cpu() - cpu_before, pg() - pg_before
    return result


@dataclass
class Cell:
    """One target's blocks over the rounds."""

    target: Target
    cpu: Callable[[], float]
    pg: Callable[[], float] = lambda: 0.0
    blocks: list[Block] = field(default_factory=list)
    warmup_failures: list[str] = field(default_factory=list)

    def median(self, value: Callable[[Block], float]) -> float:
        return statistics.median(value(b) for b in self.blocks)

    def spread(self, value: Callable[[Block], float], digits: int = 1) -> str:
        values = [value(b) for b in self.blocks]
        low, mid, high = min(values), statistics.median(values), max(values)
        return f"{mid:.{digits}f} ({low:.{digits}f}–{high:.{digits}f})"

    def latencies(self) -> list[float]:
        return [x for b in self.blocks for x in b.latencies]

    def failures(self) -> list[str]:
        return [f for b in self.blocks for f in b.failures]


@dataclass(frozen=True)
class Sizes:
    rounds: int
    requests: int
    warmup: int
    concurrency: int = 16


async def alternate(cells: list[Cell], sizes: Sizes) -> None:
    limits = httpx.Limits(
        max_connections=sizes.concurrency, max_keepalive_connections=sizes.concurrency
    )
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        for cell in cells:
            warm = await block(
                client, cell.target, sizes.warmup, sizes.concurrency, cell.cpu, cell.pg
            )
            cell.warmup_failures = warm.failures
        for number in range(sizes.rounds):
            # Forward, then backward: a drift linear in time falls on all alike.
            for cell in cells if number % 2 == 0 else cells[::-1]:
                measured = await block(
                    client, cell.target, sizes.requests, sizes.concurrency, cell.cpu, cell.pg
                )
                cell.blocks.append(measured)
            print(f"  round {number + 1}/{sizes.rounds} done", flush=True)


# --------------------------------------------------------------------------- report

MS = 1000.0
STARTED = time.perf_counter()


def rows_for(cells: list[Cell], base: dict[bool, Cell] | None) -> list[list[str]]:
    rows = []
    for cell in cells:
        row = [
            cell.target.label,
            cell.spread(lambda b: b.rate),
            cell.spread(lambda b: b.cpu_ms),
            cell.spread(lambda b: b.pg_ms) if cell.blocks[0].pg_cpu else "",
            f"{percentile(cell.latencies(), 50) * MS:.0f}",
            f"{percentile(cell.latencies(), 99) * MS:.0f}",
            f"{statistics.mean(x for b in cell.blocks for x in b.deltas or [0]):.0f}"
            if cell.target.streamed
            else "",
            str(len(cell.failures()) + len(cell.warmup_failures)),
        ]
        if base is not None:
            other = base[cell.target.streamed]
            row += [
                f"{cell.median(lambda b: b.rate) / other.median(lambda b: b.rate):.2f}",
                f"{cell.median(lambda b: b.cpu_ms) / other.median(lambda b: b.cpu_ms):.2f}",
            ]
        rows.append(row)
    return rows


HEADERS = ["server, mode", "req/s", "CPU ms", "+ PG ms", "p50 ms", "p99 ms", "deltas", "failed"]


def ratios(ours: dict[bool, Cell], peers: dict[str, dict[bool, Cell]]) -> str:
    lines = []
    for streamed in (False, True):
        mode = "streamed" if streamed else "non-streamed"
        mine = ours[streamed]
        for name, cells in peers.items():
            peer = cells[streamed]
            rate = mine.median(lambda b: b.rate) / peer.median(lambda b: b.rate)
            cpu = mine.median(lambda b: b.cpu_ms) / peer.median(lambda b: b.cpu_ms)
            with_pg = mine.median(lambda b: b.cpu_ms + b.pg_ms) / peer.median(lambda b: b.cpu_ms)
            p99 = percentile(mine.latencies(), 99) / percentile(peer.latencies(), 99)
            lines.append(
                f"  {mode:13} ÷ {name:9}: req/s {rate:.2f}x, CPU {cpu:.2f}x "
                f"({with_pg:.2f}x with PostgreSQL's), p99 {p99:.2f}x"
            )
    return "\n".join(lines)


def goals(
    ours: dict[bool, Cell], peers: dict[str, dict[bool, Cell]], skipped: list[str]
) -> list[str]:
    """Issue 35's goals, each missed one named."""
    missed = [f"{name} not measured" for name in skipped]

    def cpu(cell: Cell) -> float:
        return cell.median(lambda b: b.cpu_ms)

    def rate(cell: Cell) -> float:
        return cell.median(lambda b: b.rate)

    limits = {(False, "LiteLLM"): 1.0, (True, "LiteLLM"): 0.5, (True, "LangGraph"): 0.6}
    for (streamed, name), limit in limits.items():
        if name in peers:
            mode = "streamed" if streamed else "non-streamed"
            got = cpu(ours[streamed]) / cpu(peers[name][streamed])
            if got > limit:
                missed.append(f"{mode} CPU {got:.2f}x {name}'s (goal ≤ {limit}x)")
    for streamed in (False, True):
        mode = "streamed" if streamed else "non-streamed"
        for name, cells in peers.items():
            got = rate(ours[streamed]) / rate(cells[streamed])
            if got <= 1.0:
                missed.append(f"{mode} req/s {got:.2f}x {name}'s (goal > 1x)")
        if peers:
            best = min(percentile(c[streamed].latencies(), 99) for c in peers.values())
            got = percentile(ours[streamed].latencies(), 99) / best
            if got > 1.2:
                missed.append(f"{mode} p99 {got:.2f}x the best peer's (goal ≤ 1.2x)")
    return missed


def print_failures(cells: list[Cell]) -> int:
    failures = [f for c in cells for f in c.warmup_failures + c.failures()]
    for failure in failures[:10]:
        print(f"  failed: {failure}")
    return len(failures)


# --------------------------------------------------------------------------- the run


@contextlib.contextmanager
def upstream() -> Iterator[str]:
    fake, url = start_sse_fake("--deltas", str(DELTAS), "--pause", "0")
    try:
        yield url
    finally:
        stop_process(fake)


def agent_env(fake: str) -> dict[str, str]:
    """The agentbuilder server's: the model on the upstream, and uvloop and httptools
    importable (stack_path)."""
    extra = stack_path()
    path = os.pathsep.join(p for p in (extra, os.environ.get("PYTHONPATH", "")) if p)
    return {
        "LLM_OFFLINE": "false",
        "OPENAI_BASE_URL": f"{fake}/v1",
        "OPENAI_API_KEY": "bench-upstream",
        "PYTHONPATH": path,
    }


def agent_name(data: BenchData) -> str:
    from django.db import connection

    from agents.models import Agent

    name = str(Agent.objects.get(pk=data.agent_id).name)
    connection.close()
    return name


def run_peers(db: Database, sizes: Sizes) -> int:
    data = bench_data(callers=sizes.concurrency, config=ONE_TOOL_CONFIG)
    agent = agent_name(data)
    skipped: list[str] = []
    peers: list[LiteLLM | LangGraph] = []
    with upstream() as fake, contextlib.ExitStack() as stack:
        ours = Agentbuilder("agentbuilder", agent_env(fake))
        ours.start()
        stack.callback(ours.close)
        print(f"agentbuilder: uvicorn {' '.join(ours.options)} (as `make run`), pid {ours.pid}")
        for peer in (LiteLLM(), LangGraph()):
            stack.callback(peer.close)
            try:
                if isinstance(peer, LangGraph):
                    peer.start(fake, sizes.concurrency)
                else:
                    peer.start(fake)
            except (RuntimeError, OSError) as exc:
                print(f"{peer.name} left out: {exc}")
                skipped.append(peer.name)
                continue
            peers.append(peer)
            print(f"{peer.name}: {peer.url}, pid {peer.pid}")

        def pg() -> float:
            return server_postgres_cpu(db)

        cells = [Cell(t, ours.cpu, pg) for t in ours.targets(data, agent)]
        for peer in peers:
            cells += [Cell(t, peer.cpu) for t in peer.targets()]
        print(
            f"{sizes.rounds} rounds of {sizes.requests} calls per server and mode "
            f"(after {sizes.warmup} warm-up), concurrency {sizes.concurrency} ..."
        )
        asyncio.run(alternate(cells, sizes))
        problems = ours.problem_summary()

    mine = {c.target.streamed: c for c in cells if c.target.server == "agentbuilder"}
    theirs = {
        p.name: {c.target.streamed: c for c in cells if c.target.server == p.name} for p in peers
    }
    print(
        f"\nThe upstream answers {DELTAS} deltas at once (or one JSON answer); "
        f"medians of {sizes.rounds} blocks of {sizes.requests} (range in brackets); "
        f"latency over every call"
    )
    print(table(HEADERS, rows_for(cells, None)))
    print(
        "(CPU ms: the server's processes' CPU per call; + PG ms: agentbuilder's PostgreSQL's; "
        "deltas: content chunks per stream)"
    )
    if theirs:
        print("agentbuilder against each peer (medians; p99 over every call):")
        print(ratios(mine, theirs))
    failed = print_failures(cells)
    for line in problems[:10]:
        print(f"  agentbuilder's log: {line}")
    missed = goals(mine, theirs, skipped)
    if failed:
        missed.append(f"{failed} answers wrong")
    print(f"done in {time.perf_counter() - STARTED:.0f} s; {machine()}")
    print("peers: goals met" if not missed else f"peers: goals missed: {'; '.join(missed)}")
    return 1 if missed else 0


# The served stacks --stack compares: (name, uvicorn options but for the lifespan's).
STACKS = (
    ("asyncio + h11", ["--loop", "asyncio", "--http", "agentbuilder.serving:HTTPProtocol"]),
    ("uvloop + h11", ["--loop", "uvloop", "--http", "agentbuilder.serving:HTTPProtocol"]),
    (
        "uvloop + httptools",
        ["--loop", "uvloop", "--http", "agentbuilder.serving:HttpToolsProtocol"],
    ),
    (
        "asyncio + httptools",
        ["--loop", "asyncio", "--http", "agentbuilder.serving:HttpToolsProtocol"],
    ),
)


def stack_path() -> str:
    """A PYTHONPATH entry with uvloop and httptools, when the project's .venv lacks them."""
    try:
        import httptools  # noqa: F401
        import uvloop  # noqa: F401
    except ImportError:
        target = VENVS / "served-stack"
        stamp = target / ".requirements"
        if not (stamp.exists() and stamp.read_text() == "\n".join(STACK)):
            print(f"installing {' '.join(STACK)} into {target.relative_to(ROOT)} (once) ...")
            shutil.rmtree(target, ignore_errors=True)
            subprocess.run(  # noqa: S603 - our own command line
                [sys.executable, *PIP_INSTALL, "--target", str(target), *STACK],
                check=True,
            )
            stamp.write_text("\n".join(STACK))
        return str(target)
    return ""


def run_stack(db: Database, sizes: Sizes) -> int:
    data = bench_data(callers=sizes.concurrency, config=ONE_TOOL_CONFIG)
    agent = agent_name(data)
    with upstream() as fake, contextlib.ExitStack() as stack:
        servers = []
        for name, options in STACKS:
            server = Agentbuilder(
                name, agent_env(fake), [*options, "--lifespan", "on", "--no-proxy-headers"]
            )
            server.start()
            stack.callback(server.close)
            servers.append(server)

        def pg() -> float:
            return server_postgres_cpu(db)

        cells = [Cell(t, s.cpu, pg) for s in servers for t in s.targets(data, agent)]
        print(
            f"{sizes.rounds} rounds of {sizes.requests} calls per stack and mode "
            f"(after {sizes.warmup} warm-up), concurrency {sizes.concurrency} ..."
        )
        asyncio.run(alternate(cells, sizes))
        problems = [line for s in servers for line in s.problem_summary()]
    base = {c.target.streamed: c for c in cells if c.target.server == STACKS[0][0]}
    print(
        f"\n/v1/openai/chat/completions, one uvicorn process each; medians of {sizes.rounds} blocks"
    )
    print(table([*HEADERS, "req/s ÷ first", "CPU ÷ first"], rows_for(cells, base)))
    failed = print_failures(cells)
    for line in problems[:10]:
        print(f"  log: {line}")
    for streamed in (False, True):
        mode = "streamed" if streamed else "non-streamed"
        mine = [c for c in cells if c.target.streamed == streamed]
        best = min(mine, key=lambda c: c.median(lambda b: b.cpu_ms))
        print(f"stack: {mode}: the least CPU per call with {best.target.server}")
    print(f"done in {time.perf_counter() - STARTED:.0f} s; {machine()}")
    return 1 if failed else 0


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument("--stack", action="store_true", help="compare uvicorn loops and protocols")
    parser.add_argument("--rounds", type=int, help="rounds (default 5; --quick 2)")
    parser.add_argument(
        "--requests", type=int, help="calls per server and mode a round (1,000; --quick 50)"
    )
    args = parser.parse_args()
    sizes = Sizes(
        rounds=args.rounds or (2 if args.quick else 5),
        requests=args.requests or (50 if args.quick else 1000),
        warmup=16 if args.quick else 100,
    )
    print(machine())
    db = prepare(args.db)
    try:
        return run_stack(db, sizes) if args.stack else run_peers(db, sizes)
    finally:
        db.close()


if __name__ == "__main__":
    raise SystemExit(main())
