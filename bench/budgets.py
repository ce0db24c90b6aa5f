"""What budgets cost an invoke, and how far runs in flight together overshoot one (issue 31,
"Measure").

    .venv/bin/python bench/budgets.py [--quick] [--runs N] [--at-once 200,16] [--delay S]
        [--db private|shared]

One uvicorn process on tests/fakes' FakeOpenAI (in this process), which answers from the
conversation: an agent whose system prompt asks for it gets text at once; any other gets a
`multiply` call first and text once the conversation holds its result. Every call reports
the same usage (USAGE) and `openai/gpt-4o-mini` is priced in the catalog, so every model
call costs the same.

1. Enforcement cost: non-streamed invokes of a one-tool agent answered at once (one model
   call each), 16 at a time, in blocks of three states of one server: off, no budget and
   no rate limit applies (every run still pays the one read at its start that finds no
   budget); budgets, an environment budget and an agent budget of $1,000,000 a day,
   `block`, made through POST /v1/budgets before the block and deleted after it; and
   budgets + rate limits, the callers' requestsPerMinute and tokensPerMinute too (10^9,
   rows of agents.models.UserLimits, which has no API). Rounds of one block each, the order
   reversed every other round, so drift on a shared machine falls on every side alike.
   Prints the server's and PostgreSQL's CPU per request, each side's ratio to off (goal
   <= 1.05) and its spread over the rounds, p50 and p99 latency.
2. The parts alone: each part of enforcement (the budgets' read at a run's start, the
   gate's read and charge, the rate limits' three) called alone in this process through
   the thread hop the server calls it through, next to a hop with `SELECT 1`: CPU a call.
3. Overshoot: rows of `--runs` runs (200) of a two-call agent (the tool call, then the
   answer, each call `--delay` seconds) against one environment budget whose limitUsd is
   the cost of ten runs, a fresh budget and agent each row: `block` with the runs sent all
   at once, `block` with 16 in flight at a time (`--at-once`), then `warn` all at once.
   Prints the runs refused at start (402), ended `budget_exceeded` and completed; the
   budget's counted spend and the runs' costUsd summed, against the limit; the overshoot
   in USD and in model calls; and the bound docs/api.md#budgets promises, one model call
   for each run in flight (the most runs open at once, from the run rows' start and end).

Exits 1 on a wrong answer: an unexpected status, a run row that does not match its
response, a budget whose counted spend is not what its runs cost, an overshoot past the
bound, a run let in after a blocking budget was spent, a `warn` budget that stopped a
run. Asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from common import (
    CALLER_PREFIX,
    INVOKE_REQUEST,
    ONE_TOOL_CONFIG,
    BenchData,
    Database,
    Server,
    arguments,
    bench_data,
    cpu_seconds,
    machine,
    percentile,
    prepare,
    running,
    server_postgres_cpu,
    table,
)

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

AT_ONCE = "Answer at once, without tools."
AT_ONCE_CONFIG: dict[str, Any] = {**ONE_TOOL_CONFIG, "systemPrompt": AT_ONCE}
USAGE = (2000, 500)  # input and output tokens of every model call
TAG = "bench/budgets.py"  # the description of every budget made here, to find them again
HUGE_USD = 1_000_000  # the API's largest limitUsd: never reached
HUGE_RATE = 10**9  # the largest rate limit
FITS_RUNS = 10  # the overshoot budget's limit: the cost of this many runs


# ---------------------------------------------------------------- the fake model


def fake_model(delay: float) -> Any:
    """FakeOpenAI answering from the conversation (see the module's docstring); the
    two-call agent's calls each take `delay` seconds."""
    from tests.fakes.openai import FakeOpenAI
    from tests.fakes.server import Call, Turn

    class ToolThenAnswer(FakeOpenAI):
        def __init__(self) -> None:
            super().__init__()
            # A run burst connects hundreds of times at once; the default backlog (5) would
            # drop SYNs and add the kernel's 1 s retransmit to some calls.
            self._server.socket.listen(1024)

        def next_response(self, recorded: Any) -> Any:
            with self._lock:
                self.requests.append(recorded)
            messages = recorded.body.get("messages", [])
            if any(
                m.get("role") == "system" and AT_ONCE in str(m.get("content")) for m in messages
            ):
                return Turn(text=["Hello."], usage=USAGE)
            if messages and messages[-1].get("role") == "tool":
                return Turn(text=["It is ", "15."], usage=USAGE, delay=delay)
            return Turn(calls=[Call("multiply", {"a": 3, "b": 5})], usage=USAGE, delay=delay)

    return ToolThenAnswer()


def call_cost() -> Decimal:
    """What one model call costs, from the catalog's prices of the agents' model."""
    from django.db import connection

    from agents.models import LLMModel

    model = LLMModel.objects.get(pk=ONE_TOOL_CONFIG["llmModelId"])
    connection.close()
    assert model.input_usd_per_mtok is not None
    assert model.output_usd_per_mtok is not None
    dollars = USAGE[0] * model.input_usd_per_mtok + USAGE[1] * model.output_usd_per_mtok
    return dollars / 1_000_000


# ---------------------------------------------------------------- the API's budgets


@dataclass
class Api:
    client: httpx.AsyncClient
    url: str
    token: str  # an environment editor's (the bench's superuser)

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"}
        response = await self.client.request(
            method, f"{self.url}{path}", json=body, headers=headers
        )
        if response.status_code >= 300:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:300]}")
        return response.json() if response.content else None

    async def budget(self, scope: dict[str, Any], limit_usd: Decimal, action: str) -> str:
        body = {
            "scope": scope,
            "period": "day",
            "limitUsd": str(limit_usd),
            "action": action,
            "description": TAG,
        }
        return str((await self.call("POST", "/v1/budgets", body))["id"])

    async def spent(self, budget_id: str) -> Decimal:
        current = (await self.call("GET", f"/v1/budgets/{budget_id}"))["current"]
        return Decimal(str(current["spentUsd"]))

    async def delete(self, budget_id: str) -> None:
        await self.call("DELETE", f"/v1/budgets/{budget_id}")


def set_rate_limits(users: list[int], on: bool) -> None:
    """The callers' rate limits, so high they never refuse (on), or none (off)."""
    from django.db import connection

    from agents.models import UserLimits

    UserLimits.objects.filter(user_id__in=users).delete()
    if on:
        UserLimits.objects.bulk_create(
            UserLimits(user_id=user, requests_per_minute=HUGE_RATE, tokens_per_minute=HUGE_RATE)
            for user in users
        )
    connection.close()


def forget_bench_state() -> None:
    """Budgets and rate limits a run of this script left (one stopped half-way)."""
    from django.db import connection

    from agents.models import Budget, UserLimits

    Budget.objects.filter(description=TAG).delete()
    UserLimits.objects.filter(user__username__startswith=CALLER_PREFIX).delete()
    connection.close()


# ---------------------------------------------------------------- 1. enforcement cost


@dataclass
class Load:
    requests: int = 0
    wall: float = 0.0
    server_cpu: float = 0.0
    pg_cpu: float = 0.0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    run_ids: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    blocks: list[float] = field(default_factory=list)  # each block's server CPU ms a request

    def add(self, other: Load) -> None:
        self.blocks.append(other.ms(other.server_cpu))
        self.requests += other.requests
        self.wall += other.wall
        self.server_cpu += other.server_cpu
        self.pg_cpu += other.pg_cpu
        self.latencies += other.latencies
        self.statuses += other.statuses
        self.run_ids += other.run_ids
        self.failures += other.failures

    def ms(self, cpu: float) -> float:
        return cpu / self.requests * 1000 if self.requests else 0.0


async def load(
    client: httpx.AsyncClient,
    server: Server,
    db: Database,
    url: str,
    tokens: list[str],
    *,
    total: int,
    concurrency: int,
) -> Load:
    """`total` POSTs of the invoke body, `concurrency` at a time, each worker its own caller."""
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
            if run_id := response.headers.get("X-Run-Id"):
                result.run_ids.append(run_id)

    cpu, pg, started = cpu_seconds(server.pid), server_postgres_cpu(db), time.perf_counter()
    await asyncio.gather(*(worker(tokens[i % len(tokens)]) for i in range(concurrency)))
    result.wall = time.perf_counter() - started
    result.server_cpu = cpu_seconds(server.pid) - cpu
    result.pg_cpu = server_postgres_cpu(db) - pg
    return result


@dataclass
class Charged:
    """What an "on" block's budgets counted, and the runs the block made."""

    spent: dict[str, Decimal]  # budget id: its period's spend when the block ended
    before: dict[str, Decimal]  # the same when the block began
    run_ids: list[str]


@contextlib.asynccontextmanager
async def enforced(
    api: Api, side: str, data: BenchData, callers: list[int], charged: list[Charged]
) -> AsyncIterator[list[str]]:
    """For the length of a block of `side`: budgets that apply to every run of `data`'s
    agent and never block (and the callers' rate limits); what the budgets counted, and the
    runs the block made, are appended to `charged`."""
    if side == OFF:
        yield []
        return
    scopes: list[dict[str, Any]] = [{"environment": None}, {"agent": data.agent_id}]
    ids = [await api.budget(scope, Decimal(HUGE_USD), "block") for scope in scopes]
    rates = side == RATES
    if rates:
        await asyncio.to_thread(set_rate_limits, callers, True)
    run_ids: list[str] = []
    try:
        before = {i: await api.spent(i) for i in ids}
        yield run_ids
        charged.append(Charged({i: await api.spent(i) for i in ids}, before, run_ids))
    finally:
        for budget_id in ids:
            await api.delete(budget_id)
        if rates:
            await asyncio.to_thread(set_rate_limits, callers, False)


OFF, BUDGETS, RATES = "off", "budgets", "budgets + rate limits"
SIDES = (OFF, BUDGETS, RATES)


def alternation(rounds: int) -> Iterator[str]:
    """Each side once a round, the order reversed every other round, so that each side
    comes first and last as often, and runs as often before and after each other."""
    for number in range(rounds):
        yield from SIDES if number % 2 == 0 else reversed(SIDES)


async def enforcement_cost(
    server: Server, db: Database, api: Api, data: BenchData, callers: list[int], sizes: Sizes
) -> tuple[dict[str, Load], list[Charged]]:
    invoke = f"{server.url}/v1/agents/{data.agent_id}/versions/latest/invoke"
    sides = {side: Load() for side in SIDES}
    charged: list[Charged] = []

    async def block(total: int) -> Load:
        return await load(
            api.client, server, db, invoke, data.tokens, total=total, concurrency=sizes.concurrency
        )

    for side in SIDES:
        async with enforced(api, side, data, callers, []):
            await block(sizes.warmup)
    for side in alternation(sizes.blocks):
        async with enforced(api, side, data, callers, charged) as run_ids:
            measured = await block(sizes.total // sizes.blocks)
            run_ids += measured.run_ids
        sides[side].add(measured)
    return sides, charged


def cost_checked(sides: dict[str, Load], charged: list[Charged], call: Decimal) -> list[str]:
    """What is wrong: a failed invoke, a run not completed, a budget that counted other than
    what its block's runs cost."""
    from django.db import connection

    from agents.models import Run

    wrong = [f"invoke {failure}" for side in sides.values() for failure in side.failures[:5]]
    for name, side in sides.items():
        rows = Run.objects.filter(pk__in=side.run_ids)
        if len(set(side.run_ids)) != side.requests or rows.exclude(status="completed").exists():
            wrong.append(f"{name}: {len(set(side.run_ids))} runs for {side.requests} invokes")
    for block in charged:
        costs = Run.objects.filter(pk__in=block.run_ids).values_list("cost_usd", flat=True)
        cost = sum((c or Decimal(0) for c in costs), Decimal(0))
        if cost != len(block.run_ids) * call:
            wrong.append(f"the runs cost {cost}, not {len(block.run_ids)} calls at {call}")
        for budget_id, spent in block.spent.items():
            if spent - block.before[budget_id] != cost:
                wrong.append(f"budget {budget_id} counted {spent}, its runs cost {cost}")
    connection.close()
    return wrong


def cost_report(sides: dict[str, Load], *, concurrency: int) -> None:
    off = sides[OFF]
    print(
        f"\n1. Enforcement cost: {off.requests} invokes a side, {concurrency} at a time, in "
        f"{len(off.blocks)} alternating rounds of a block a side; budgets: an environment and "
        f"an agent budget (block, never reached); rate limits: the callers' "
        f"requestsPerMinute and tokensPerMinute, {HUGE_RATE:,} (never reached)"
    )
    ms = 1000.0
    rows = []
    for name, side in sides.items():
        server = side.ms(side.server_cpu) / off.ms(off.server_cpu)
        both = side.ms(side.server_cpu + side.pg_cpu) / off.ms(off.server_cpu + off.pg_cpu)
        rounds = sorted(b / a for a, b in zip(off.blocks, side.blocks, strict=True))
        rows.append(
            [
                name,
                f"{side.requests / side.wall:.0f}",
                f"{percentile(side.latencies, 50) * ms:.1f}",
                f"{percentile(side.latencies, 99) * ms:.1f}",
                f"{side.ms(side.server_cpu):.2f}",
                f"{side.ms(side.pg_cpu):.2f}",
                f"{side.ms(side.server_cpu + side.pg_cpu):.2f}",
                f"{server:.3f}",
                f"{both:.3f}",
                f"{rounds[0]:.2f} / {percentile(rounds, 50):.2f} / {rounds[-1]:.2f}",
            ]
        )
    headers = [
        "enforcement", "req/s", "p50 ms", "p99 ms", "server CPU ms", "PG CPU ms", "total ms",
        "server / off", "total / off", "rounds' server / off",
    ]  # fmt: skip
    print(table(headers, rows))
    print(
        "(CPU per request; goal: server / off <= 1.05; rounds': each round's block against "
        "the off block of the same round, min / median / max)"
    )


# ---------------------------------------------------------------- 3. overshoot


@dataclass
class Burst:
    """The answers to `runs` runs, `at_once` in flight at a time: by kind, and the runs
    they name (refused runs have none)."""

    statuses: Counter[str] = field(default_factory=Counter)
    run_ids: dict[str, str] = field(default_factory=dict)  # run id: "completed" or "stopped"
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    wall: float = 0.0

    def count(self, response: httpx.Response) -> None:
        run_id = response.headers.get("X-Run-Id")
        if response.status_code == 200 and run_id:
            kind = "completed"
        elif response.status_code == 402 and run_id:
            kind = "stopped"
        elif response.status_code == 402 and "budget" in response.json():
            kind = "refused"
        else:
            kind = str(response.status_code)
            self.failures.append(f"{response.status_code} {response.text[:300]}")
        self.statuses[kind] += 1
        if run_id:
            self.run_ids[run_id] = kind


async def burst(server: Server, data: BenchData, *, runs: int, at_once: int) -> Burst:
    """`runs` invokes of `data`'s agent, `at_once` at a time, each on its own connection."""
    result = Burst()
    invoke = f"{server.url}/v1/agents/{data.agent_id}/versions/latest/invoke"
    numbers = iter(range(runs))

    async def worker(client: httpx.AsyncClient, token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        for _ in numbers:
            started = time.perf_counter()
            try:
                response = await client.post(invoke, json=INVOKE_REQUEST, headers=headers)
            except httpx.HTTPError as exc:
                result.statuses["error"] += 1
                result.failures.append(repr(exc))
                continue
            result.latencies.append(time.perf_counter() - started)
            result.count(response)

    limits = httpx.Limits(max_connections=at_once, max_keepalive_connections=at_once)
    async with httpx.AsyncClient(limits=limits, timeout=300) as client:
        started = time.perf_counter()
        tokens = data.tokens
        await asyncio.gather(*(worker(client, tokens[i % len(tokens)]) for i in range(at_once)))
        result.wall = time.perf_counter() - started
    return result


@dataclass(frozen=True)
class RunRow:
    id: str
    status: str
    code: str | None  # the error's
    cost: Decimal
    model_calls: int
    started: datetime
    ended: datetime


@dataclass
class Overshoot:
    """One budget against `runs` runs of a fresh agent, `at_once` at a time."""

    action: str
    runs: int
    at_once: int
    limit: Decimal
    spent: Decimal = Decimal(0)  # the budget's count
    burst: Burst = field(default_factory=Burst)
    after: Burst | None = None  # one run after the burst, against a blocking budget
    model_calls: int = 0  # the fake's
    rows: list[RunRow] = field(default_factory=list)

    @property
    def cost(self) -> Decimal:
        return sum((row.cost for row in self.rows), Decimal(0))

    @property
    def step_calls(self) -> int:
        return sum(row.model_calls for row in self.rows)

    def in_flight(self) -> int:
        """The most runs in flight at once: from their rows' start and end."""
        edges = sorted(
            [(row.started, 1) for row in self.rows] + [(row.ended, -1) for row in self.rows],
            key=lambda edge: (edge[0], edge[1]),  # an end before a start at the same instant
        )
        most = now = 0
        for _, step in edges:
            now += step
            most = max(most, now)
        return most


async def overshoot(server: Server, api: Api, data: BenchData, fake: Any, shot: Overshoot) -> None:
    """Runs `shot` against a budget of the environment made for it, deleted after."""
    budget_id = await api.budget({"environment": None}, shot.limit, shot.action)
    try:
        calls = len(fake.requests)
        shot.burst = await burst(server, data, runs=shot.runs, at_once=shot.at_once)
        if shot.action == "block":  # spent: the next run is refused before it opens
            shot.after = await burst(server, data, runs=1, at_once=1)
        shot.model_calls = len(fake.requests) - calls
        shot.spent = await api.spent(budget_id)
    finally:
        await api.delete(budget_id)


def with_rows(shot: Overshoot, data: BenchData) -> None:
    """The agent's run rows: id, status, error code, cost, model calls, start and end."""
    from django.db import connection

    from agents.models import Run

    for run_id, status, error, cost, steps, started, ended in Run.objects.filter(
        agent_id=data.agent_id
    ).values_list("id", "status", "error", "cost_usd", "steps", "started_at", "completed_at"):
        calls = sum(step.get("type") == "model_call" for step in steps)
        code = (error or {}).get("code")
        cost, ended = cost or Decimal(0), ended or started  # a run still going is wrong anyway
        shot.rows.append(RunRow(str(run_id), status, code, cost, calls, started, ended))
    connection.close()


def overshoot_checked(shot: Overshoot, call: Decimal) -> list[str]:
    """What is wrong with a burst's answers, rows and count (nothing, when all is as said)."""
    name = f"{shot.action}, {shot.at_once} at once:"
    wrong = [f"{name} {failure}" for failure in shot.burst.failures[:5]]
    expected = {"completed": ("completed", None), "stopped": ("failed", "budget_exceeded")}
    for row in shot.rows:
        kind = shot.burst.run_ids.get(row.id)
        if kind is None or expected[kind] != (row.status, row.code):
            wrong.append(f"{name} run {row.id} is {row.status} {row.code}, answered {kind}")
    if len(shot.rows) != len(shot.burst.run_ids):
        wrong.append(f"{name} {len(shot.rows)} run rows, {len(shot.burst.run_ids)} answers")
    if shot.cost != shot.spent or shot.step_calls * call != shot.cost:
        wrong.append(f"{name} counted {shot.spent}, runs cost {shot.cost}, {shot.step_calls} calls")
    if shot.model_calls != shot.step_calls:
        wrong.append(f"{name} {shot.model_calls} model calls, {shot.step_calls} in the steps")
    if shot.action == "block" and shot.spent - shot.limit > shot.in_flight() * call:
        wrong.append(f"{name} overshoot {shot.spent - shot.limit} past the bound")
    if shot.after is not None and shot.after.statuses != Counter(refused=1):
        wrong.append(f"{name} a run after the burst was {dict(shot.after.statuses)}, not refused")
    if shot.action == "warn" and shot.burst.statuses["completed"] != shot.runs:
        wrong.append(f"{name} {dict(shot.burst.statuses)} (a warn budget must stop nothing)")
    return wrong


def usd(amount: Decimal) -> str:
    return f"{amount:.6f}"


def overshoot_report(shots: list[Overshoot], call: Decimal, delay: float) -> None:
    limit = shots[0].limit
    print(
        f"\n3. Overshoot: {shots[0].runs} runs of 2 model calls ({delay:g} s each, ${call} "
        f"each: a run ${2 * call}) against one environment budget of ${limit} a day "
        f"({FITS_RUNS} runs); a fresh budget and agent each row"
    )
    rows = []
    for shot in shots:
        statuses, p50, p99 = (
            shot.burst.statuses,
            *(percentile(shot.burst.latencies, p) for p in (50, 99)),
        )
        over = shot.spent - shot.limit
        bound = shot.in_flight() * call if shot.action == "block" else None
        rows.append(
            [
                shot.action,
                shot.at_once,
                statuses["refused"],
                statuses["stopped"],
                statuses["completed"],
                shot.step_calls,
                usd(shot.spent),
                usd(shot.cost),
                f"{shot.spent / shot.limit:.2f}x",
                usd(over),
                f"{over / call:.0f}",
                shot.in_flight(),
                "-" if bound is None else usd(bound),
                "-" if bound is None else ("yes" if over <= bound else "NO"),
                f"{p50:.2f} / {p99:.2f}",
            ]
        )
    headers = [
        "action", "at once", "refused 402", "budget_exceeded", "completed", "model calls",
        "counted $", "runs' costUsd $", "x limit", "over $", "over calls", "in flight",
        "bound $", "within", "run p50/p99 s",
    ]  # fmt: skip
    print(table(headers, rows))
    print(
        "(refused 402: before the run opened; in flight: the most runs open at once, from the "
        "run rows' start and end;\n bound: one model call per run in flight, as "
        "docs/api.md#budgets promises; counted: the budget's spentUsd, GET /v1/budgets/{id})"
    )
    for shot in shots:
        if shot.after is not None:
            refused = shot.after.statuses == Counter(refused=1)
            print(
                f"one run more after the block burst of {shot.at_once} at once: refused at "
                f"start (402): {'yes' if refused else 'NO'}"
            )


# ---------------------------------------------------------------- 2. the parts alone

# Each part: (what it is, whether the server calls it in a thread hop of its own, the call).
Part = tuple[str, bool, Callable[[], Awaitable[Any]]]


async def parts_alone(
    db: Database, data: BenchData, caller: int, call: Decimal, rounds: int
) -> list[Any]:
    """Each part of enforcement called alone in this process, `rounds` times one after
    another (half forwards, half backwards), each through the thread hop the server calls
    it through (agentbuilder.db.in_db): CPU ms a call of this process and of PostgreSQL.
    The parts that run inside a hop the run pays anyway cost their own less the hop's."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agentbuilder.db import in_db
    from agents.access import rate_limits
    from agents.budgets.gate import BudgetGate, budget_check
    from agents.llm.base import Usage

    def select_one() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")

    def applying(environment: uuid.UUID) -> Any:
        return budget_check(environment_id=environment, agent_id=agent, user_id=caller)

    def caller_limits() -> Any:
        return rate_limits.caller_limits(get_user_model().objects.get(pk=caller))

    agent = uuid.UUID(data.agent_id)
    environment = await in_db(default_environment)()
    gate, limits = await in_db(applying)(environment), await in_db(caller_limits)()
    assert isinstance(gate, BudgetGate), "the bench's budgets apply to its agent"
    usage, cost = Usage(*USAGE), float(call)
    admit_request = rate_limits.request_admit

    async def next_call() -> None:
        # A call ends (kept), the next begins: its before_call charges the kept one.
        await gate.after_call("m", usage, cost)
        await gate.before_call()

    async def last_call() -> None:
        # A run's last call, charged by the recorder's settle in the hop of the run's end.
        await gate.after_call("m", usage, cost)
        await in_db(gate.settle)()

    cases: list[Part] = [
        ("a hop with one statement (SELECT 1)", True, lambda: in_db(select_one)()),
        ("budgets read, none apply (lookup)", False, lambda: in_db(applying)(uuid.uuid4())),
        ("budgets read, two apply (lookup)", False, lambda: in_db(applying)(environment)),
        ("a call charged before the next", True, next_call),
        ("the last call charged (the end's hop)", False, last_call),
        ("request_admit (requestsPerMinute)", False, lambda: in_db(admit_request)(limits)),
        ("tokens_admit (tokensPerMinute)", False, lambda: in_db(rate_limits.tokens_admit)(limits)),
        ("tokens_charge (end hop)", False, lambda: in_db(rate_limits.tokens_charge)(limits, 1)),
    ]  # fmt: skip
    spent = {name: [0.0, 0.0] for name, _, _ in cases}
    for order in (cases, cases[::-1]):
        for name, _, part in order:
            for _ in range(10):  # warm-up: plans cached, connections open
                await part()
            cpu, pg = time.process_time(), server_postgres_cpu(db)
            for _ in range(rounds // 2):
                await part()
            spent[name][0] += time.process_time() - cpu
            spent[name][1] += server_postgres_cpu(db) - pg
    hop = spent[cases[0][0]]
    return [
        (
            name,
            own,
            *(x / rounds * 1000 for x in spent[name]),
            *((x - h) / rounds * 1000 for x, h in zip(spent[name], hop, strict=True)),
        )
        for name, own, _ in cases
    ]


def default_environment() -> uuid.UUID:
    from agents.access.environments import DEFAULT_ENVIRONMENT
    from agents.models import Environment

    return Environment.objects.get(name=DEFAULT_ENVIRONMENT).pk


def parts_report(rows: list[Any], rounds: int) -> None:
    print(
        f"\n2. The parts alone: each called {rounds} times in this process, one at a time, "
        "through a thread hop (in_db) as the server calls it"
    )
    headers = ["part", "own hop in a run", "CPU ms", "PG CPU ms", "CPU less a hop", "PG less"]
    print(
        table(
            headers,
            [
                [
                    name,
                    "yes" if own else "no",
                    f"{cpu:.3f}",
                    f"{pg:.3f}",
                    f"{cpu_less:.3f}",
                    f"{pg_less:.3f}",
                ]
                for name, own, cpu, pg, cpu_less, pg_less in rows
            ],
        )
    )
    print(
        "(own hop: the server calls it in a hop of its own, so a run pays the whole; otherwise "
        "inside a hop the run makes anyway, so it pays the part less a hop)"
    )


# ---------------------------------------------------------------- main


@dataclass(frozen=True)
class Sizes:
    total: int  # invokes a side, enforcement cost
    warmup: int
    concurrency: int
    blocks: int  # rounds of a block a side
    parts: int  # calls of each part alone
    runs: int  # runs an overshoot row
    at_once: tuple[int, ...]  # the overshoot rows with a blocking budget
    delay: float


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument("--runs", type=int, help="runs an overshoot row (200; --quick: 50)")
    parser.add_argument(
        "--at-once", help="runs in flight at a time, one blocking row each (200,16; --quick: 50,8)"
    )
    parser.add_argument("--delay", type=float, default=0.2, help="seconds a model call takes")
    args = parser.parse_args()
    quick = args.quick
    runs = args.runs or (50 if quick else 200)
    at_once = tuple(int(n) for n in (args.at_once or f"{runs},{8 if quick else 16}").split(","))
    sizes = Sizes(
        total=200 if quick else 2000,
        warmup=40 if quick else 100,
        concurrency=16,
        blocks=2 if quick else 10,
        parts=100 if quick else 1000,
        runs=runs,
        at_once=at_once,
        delay=args.delay,
    )
    print(machine())
    db = prepare(args.db)
    try:
        forget_bench_state()
        return asyncio.run(run(db, sizes))
    finally:
        forget_bench_state()
        db.close()


async def run(db: Database, sizes: Sizes) -> int:
    from asgiref.sync import sync_to_async

    def orm(function: Any) -> Any:
        return sync_to_async(function, thread_sensitive=False)

    fake = fake_model(sizes.delay)
    call = await orm(call_cost)()
    cost_agent, admin_token, callers = await orm(cost_setup)(sizes.concurrency)
    shots = [Overshoot("block", sizes.runs, n, FITS_RUNS * 2 * call) for n in sizes.at_once]
    shots.append(Overshoot("warn", sizes.runs, sizes.runs, FITS_RUNS * 2 * call))
    agents = [await orm(bench_data)(callers=sizes.concurrency) for _ in shots]
    env = {
        "DJANGO_SETTINGS_MODULE": "bench.settings",
        "LLM_OFFLINE": "false",
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": "bench-key",
    }
    with fake, running(Server(env)) as server:
        limits = httpx.Limits(max_connections=sizes.concurrency + 1)
        async with httpx.AsyncClient(limits=limits, timeout=120) as client:
            api = Api(client, server.url, admin_token)
            sides, charged = await enforcement_cost(server, db, api, cost_agent, callers, sizes)
            async with enforced(api, RATES, cost_agent, callers, []):
                parts = await parts_alone(db, cost_agent, callers[0], call, sizes.parts)
            for shot, agent in zip(shots, agents, strict=True):
                await overshoot(server, api, agent, fake, shot)
        problems = server.problem_summary()
    cost_report(sides, concurrency=sizes.concurrency)
    parts_report(parts, sizes.parts)
    wrong = await orm(cost_checked)(sides, charged, call)
    for shot, agent in zip(shots, agents, strict=True):
        await orm(with_rows)(shot, agent)
        wrong += overshoot_checked(shot, call)
    overshoot_report(shots, call, sizes.delay)
    for line in problems[:10]:
        print(f"  server log: {line[:160]}")
    for line in wrong:
        print(f"WRONG: {line}")
    return 1 if wrong else 0


def cost_setup(concurrency: int) -> tuple[BenchData, str, list[int]]:
    """The agent answered at once, an environment editor's token, the callers' user ids."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agents.access.tokens import token_decode, token_encode

    agent = bench_data(callers=concurrency, config=AT_ONCE_CONFIG)
    admin = get_user_model().objects.get(username="bench-admin")
    token = token_encode(user_id=admin.pk, environment_id=None)[0]
    callers = [token_decode(t).user_id for t in agent.tokens]
    connection.close()
    return agent, token, callers


if __name__ == "__main__":
    raise SystemExit(main())
