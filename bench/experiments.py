"""Issue 29's figures: a 1,000-case experiment run by 1, then 2 Celery workers, its CPU per
case against a plain invoke's, and the compare page of two 1,000-case experiments.

    .venv/bin/python bench/experiments.py [--quick] [--cases N] [--workers 1,2]
        [--concurrency 8] [--slots 16] [--renders 30] [--db private|shared]

One uvicorn process (the API, the admin) and Celery workers (`--pool threads`,
`--concurrency` threads each, `--prefetch-multiplier 1` so two workers share an
experiment's slots) on one PostgreSQL (`--db private` by default: a throwaway server, whose
processes alone are counted) and one Redis, all on loopback. The agent is a tool agent with
`multiply` on the offline model (`local.demo-v1`); the dataset has N cases (default 1,000;
--quick: 200), four in five "What is A times B?" expecting the tool's answer (`output`,
`contains`, the `multiply` call), one in five "What is A plus B?" (no tool does it: the
model answers itself) expecting the sum (`contains`).

1. Plain invoke, the baseline: the same N inputs sent as `POST
   /v1/agents/{id}/versions/1/invoke` by 8 clients, in two halves, one before the
   experiments and one after (a busy machine's drift falls on both sides); server plus
   PostgreSQL CPU per call.
2. For each number of workers (`--workers`): the workers started and warmed up by a small
   experiment of their own, then one experiment of the N cases (`POST /v1/experiments`,
   `concurrency` `--slots`); cases per second (from its creation to its end, the database's
   clock), workers' plus PostgreSQL's CPU per case and its ratio to the invoke's (the
   issue's goal: at most 1.2x), the runs' p50/p95 latency from the experiment's summary.
   The experiments alternate version 1 and version 2, whose tool is named `product`: the
   same work, answers that fail `exact` and `trajectory`, so their comparison has
   regressions to show.
3. The first two experiments compared, `--renders` times each, one request at a time: the
   admin's compare page (logged in through the admin's login form; every page a new
   comparison) when it exists, and `GET /v1/experiments/compare?a=&b=`: the server's CPU
   per request (its p50/p95, the server being idle between requests) against the issue's
   goal of 300 ms, PostgreSQL's, and the client's wall time.

Asserts nothing about time; exits 1 when something is wrong (a non-200, a wrong answer, an
experiment that did not complete every case, a case that errored).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import (
    ROOT,
    Database,
    Server,
    arguments,
    bench_data,
    cpu_seconds,
    machine,
    percentile,
    prepare,
    require,
    running,
    server_postgres_cpu,
    start_redis,
    start_worker,
    stop_process,
    table,
    tree_cpu,
)

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

CALCULATOR: dict[str, Any] = {
    "tools": [
        {
            "toolType": "function",
            "name": "multiply",
            "description": "Multiplies two numbers",
            "funcName": "multiply",
        }
    ],
    "llmModelId": "local.demo-v1",
    "systemPrompt": "You are a helpful assistant with access to various tools.",
}
# Version 2: the same tool under another name, so the same work answers otherwise.
RENAMED: dict[str, Any] = {
    **CALCULATOR,
    "tools": [{**CALCULATOR["tools"][0], "name": "product"}],
}
WANTED_SCORERS = ("exact", "contains", "trajectory")
CLIENTS = 8  # plain invokes in flight, as many as one worker's threads
WARMUP_CASES = 32
# Generous waits that end a stuck run of the bench rather than hang it (not measurements).
READY_SECONDS, EXPERIMENT_SECONDS = 120, 1800
MS = 1000.0


@dataclass(frozen=True)
class Case:
    text: str
    result: int
    tool: bool  # answered by the multiply tool


def cases_of(count: int, offset: int = 0) -> list[Case]:
    made = []
    for i in range(offset, offset + count):
        a, b = 2 + i % 97, 3 + (i * 7) % 89
        if i % 5 == 4:
            made.append(Case(f"What is {a} plus {b}?", a + b, tool=False))
        else:
            made.append(Case(f"What is {a} times {b}?", a * b, tool=True))
    return made


def wire(case: Case) -> dict[str, Any]:
    expected: dict[str, Any] = {"contains": [str(case.result)]}
    if case.tool:
        a, b = (int(n) for n in re.findall(r"\d+", case.text))
        expected["output"] = f"The result of multiply({a}, {b}) is {case.result}."
        expected["toolCalls"] = [{"name": "multiply", "arguments": {"a": a, "b": b}}]
    return {"input": case.text, "expected": expected}


# ---------------------------------------------------------------- data


@dataclass(frozen=True)
class Setup:
    agent_id: str
    tokens: list[str]
    dataset_id: str
    warmup_dataset_id: str
    admin: str
    password: str
    scorers: list[str]


def setup(cases: list[Case]) -> Setup:
    """The agent (versions 1 and 2), its callers, the datasets, the admin's password."""
    from django.db import connection

    from agentbuilder.users import User
    from agents.access.environments import DEFAULT_ENVIRONMENT
    from agents.evals.scorers.registry import SCORER_NAMES
    from agents.evals.services import cases_add, dataset_create
    from agents.models import Agent, Environment
    from agents.services.versions import version_add

    data = bench_data(callers=CLIENTS, config=CALCULATOR)
    admin = User.objects.get(username="bench-admin")
    password = secrets.token_urlsafe(16)
    admin.set_password(password)
    admin.save(update_fields=["password"])
    agent = Agent.objects.get(pk=data.agent_id)
    version_add(user=admin, agent=agent, config=RENAMED)
    env = Environment.objects.get(name=DEFAULT_ENVIRONMENT)
    tag = secrets.token_hex(4)
    datasets = []
    for name, items in (("cases", cases), ("warmup", cases_of(WARMUP_CASES, len(cases)))):
        dataset = dataset_create(
            user=admin, environment=env, name=f"bench-{name}-{tag}", agent_type="tool"
        )
        cases_add(user=admin, dataset=dataset, cases=[wire(c) for c in items])
        datasets.append(str(dataset.pk))
    scorers = [name for name in WANTED_SCORERS if name in SCORER_NAMES]
    connection.close()
    return Setup(
        agent_id=data.agent_id,
        tokens=data.tokens,
        dataset_id=datasets[0],
        warmup_dataset_id=datasets[1],
        admin=admin.get_username(),
        password=password,
        scorers=scorers,
    )


# ---------------------------------------------------------------- plain invokes


@dataclass
class Invokes:
    calls: int = 0
    server_cpu: float = 0.0
    pg_cpu: float = 0.0
    latencies: list[float] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)

    def add(self, other: Invokes) -> None:
        self.calls += other.calls
        self.server_cpu += other.server_cpu
        self.pg_cpu += other.pg_cpu
        self.latencies += other.latencies
        self.run_ids += other.run_ids
        self.wrong += other.wrong

    def per_call_ms(self) -> float:
        return (self.server_cpu + self.pg_cpu) / max(self.calls, 1) * MS


async def invokes(server: Server, db: Database, s: Setup, cases: list[Case]) -> Invokes:
    result = Invokes(calls=len(cases))
    url = f"{server.url}/v1/agents/{s.agent_id}/versions/1/invoke"
    queue = iter(cases)

    async def client(http: httpx.AsyncClient, token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        for case in queue:
            body = {"messages": [{"role": "user", "content": case.text}]}
            started = time.perf_counter()
            answer = await http.post(url, json=body, headers=headers)
            result.latencies.append(time.perf_counter() - started)
            if answer.status_code != 200:
                result.wrong.append(f"invoke {answer.status_code}: {answer.text[:200]}")
                continue
            result.run_ids.append(answer.headers.get("X-Run-Id", ""))
            if str(case.result) not in str(answer.json().get("output")):
                result.wrong.append(f"invoke {case.text!r} answered {answer.text[:200]}")

    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    async with httpx.AsyncClient(limits=limits, timeout=120) as http:
        cpu, pg = cpu_seconds(server.pid), server_postgres_cpu(db)
        await asyncio.gather(*(client(http, s.tokens[i]) for i in range(CLIENTS)))
        result.server_cpu = cpu_seconds(server.pid) - cpu
        result.pg_cpu = server_postgres_cpu(db) - pg
    return result


def run_latencies(run_ids: list[str]) -> list[int]:
    """The runs' own latency (`latency_ms`, as an experiment's summary reads it)."""
    from django.db import connection

    from agents.models import Run

    found = Run.objects.filter(pk__in=run_ids).values_list("latency_ms", flat=True)
    values = [v for v in found if v is not None]
    connection.close()
    return values


# ---------------------------------------------------------------- experiments


@dataclass
class Trial:
    workers: int
    version: int
    experiment_id: str = ""
    status: str = ""
    done: int = 0
    total: int = 0
    seconds: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)
    worker_cpu: list[float] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    wrong: list[str] = field(default_factory=list)

    def per_case_ms(self, *parts: str) -> float:
        return sum(self.cpu[p] for p in parts) / max(self.done, 1) * MS


def experiment_post(server: Server, s: Setup, dataset_id: str, version: int, slots: int) -> str:
    body = {
        "agentId": s.agent_id,
        "version": str(version),
        "datasetId": dataset_id,
        "scorers": s.scorers,
        "concurrency": slots,
    }
    headers = {"Authorization": f"Bearer {s.tokens[0]}"}
    answer = httpx.post(f"{server.url}/v1/experiments", json=body, headers=headers, timeout=300)
    if answer.status_code != 202:
        raise RuntimeError(f"POST /v1/experiments {answer.status_code}: {answer.text[:500]}")
    return str(answer.json()["id"])


def experiment_wait(experiment_id: str) -> Any:
    """The experiment once it has ended (polled twice a second on one connection)."""
    from django.db import connection

    from agents.models import EXPERIMENT_ENDED, Experiment

    deadline = time.monotonic() + EXPERIMENT_SECONDS
    try:
        while time.monotonic() < deadline:
            experiment = Experiment.objects.get(pk=experiment_id)
            if experiment.status in EXPERIMENT_ENDED:
                return experiment
            time.sleep(0.5)
    finally:
        connection.close()
    raise RuntimeError(f"experiment {experiment_id} did not end within {EXPERIMENT_SECONDS} s")


def workers_ready(broker: str, count: int) -> None:
    """Wait until `count` workers answer a ping (Celery's remote control, over Redis)."""
    from celery import Celery

    app = Celery(broker=broker)
    deadline = time.monotonic() + READY_SECONDS
    try:
        while time.monotonic() < deadline:
            if len(app.control.ping(timeout=1.0)) >= count:
                return
        raise RuntimeError(f"{count} workers did not answer within {READY_SECONDS} s")
    finally:
        app.close()


def trial(
    server: Server,
    db: Database,
    s: Setup,
    *,
    workers: int,
    version: int,
    env: dict[str, str],
    broker: str,
    concurrency: int,
    slots: int,
    profile: Path | None,
) -> Trial:
    print(f"{workers} worker(s): experiment of version {version}", flush=True)
    result = Trial(workers, version)
    options = ("--prefetch-multiplier", "1")
    started = [start_worker(n, env, "threads", concurrency, *options) for n in range(workers)]
    try:
        workers_ready(broker, workers)
        # Each worker's first cases import the runtime and open connections: not measured.
        experiment_wait(experiment_post(server, s, s.warmup_dataset_id, version, slots))
        before = [tree_cpu(p.pid) for p, _ in started]
        server_before, pg_before = cpu_seconds(server.pid), server_postgres_cpu(db)
        result.experiment_id = experiment_post(server, s, s.dataset_id, version, slots)
        raw = None if profile is None else profile / f"experiment-{workers}-worker-0.txt"
        with profiled(started[0][0].pid, raw):
            experiment = experiment_wait(result.experiment_id)
        pg_after, server_after = server_postgres_cpu(db), cpu_seconds(server.pid)
        result.worker_cpu = [tree_cpu(p.pid) - b for (p, _), b in zip(started, before, strict=True)]
        result.cpu = {
            "workers": sum(result.worker_cpu),
            "postgres": pg_after - pg_before,
            "server": server_after - server_before,
        }
        result.status, result.done, result.total = (
            experiment.status,
            experiment.done,
            experiment.total,
        )
        result.summary = experiment.summary or {}
        result.seconds = (experiment.completed_at - experiment.created_at).total_seconds()
        if (result.status, result.done) != ("completed", result.total):
            result.wrong.append(f"experiment {result.status}, {result.done}/{result.total}")
        if result.summary.get("errors"):
            result.wrong.append(f"{result.summary['errors']} cases errored")
    finally:
        for process, log in started:
            stop_process(process, timeout=60)
            text = log.read_text(errors="replace")
            if "Traceback" in text or "ERROR" in text:
                print(f"worker log {log}:\n{text[-3000:]}")
            log.unlink(missing_ok=True)
    return result


# ---------------------------------------------------------------- the compare page


@dataclass
class Renders:
    what: str
    server_cpu: list[float] = field(default_factory=list)
    pg_cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    size: int = 0
    wrong: list[str] = field(default_factory=list)


def admin_login(http: httpx.Client, s: Setup) -> None:
    """Through the admin's login form, as a person would."""
    form = http.get("/admin/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    if form.status_code != 200 or token is None:
        raise RuntimeError(f"GET /admin/login/ {form.status_code}: {form.text[:300]}")
    answer = http.post(
        "/admin/login/?next=/admin/",
        data={
            "csrfmiddlewaretoken": token.group(1),
            "username": s.admin,
            "password": s.password,
            "next": "/admin/",
        },
    )
    if answer.status_code != 302 or "sessionid" not in http.cookies:
        raise RuntimeError(f"admin login: {answer.status_code} {answer.text[:300]}")


def admin_compare_path(agent_id: str) -> str | None:
    """The admin's compare page of the agent's experiments, if the admin has one yet."""
    from django.urls import NoReverseMatch, reverse

    try:
        return reverse("admin:agents_agent_experiments_compare", args=[agent_id])
    except NoReverseMatch:
        return None


def renders(
    http: httpx.Client,
    server: Server,
    db: Database,
    what: str,
    path: str,
    count: int,
    profile: Path | None,
) -> Renders:
    result = Renders(what)
    for _ in range(3):  # warm the path up, not counted
        http.get(path)
    with profiled(server.pid, profile):
        _render(http, server, db, path, count, result)
    return result


def _render(
    http: httpx.Client, server: Server, db: Database, path: str, count: int, result: Renders
) -> None:
    for _ in range(count):
        cpu, pg, started = cpu_seconds(server.pid), server_postgres_cpu(db), time.perf_counter()
        answer = http.get(path)
        wall = time.perf_counter() - started
        server_cpu, pg_cpu = cpu_seconds(server.pid) - cpu, server_postgres_cpu(db) - pg
        if answer.status_code != 200:
            result.wrong.append(f"{result.what}: {answer.status_code} {answer.text[:300]}")
            return
        result.server_cpu.append(server_cpu)
        result.pg_cpu.append(pg_cpu)
        result.wall.append(wall)
        result.size = len(answer.content)


@contextlib.contextmanager
def profiled(pid: int, raw: Path | None) -> Iterator[None]:
    """py-spy samples `pid` while the block runs (the threads holding the GIL: its CPU),
    into `raw` (collapsed stacks); nothing without `raw`."""
    if raw is None:
        yield
        return
    spy = subprocess.Popen(  # noqa: S603 - our own command line
        [
            str(ROOT / ".venv" / "bin" / "py-spy"),
            *("record", "-p", str(pid), "--gil", "--nonblocking", "-r", "200"),
            *("-f", "raw", "-o", str(raw)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    time.sleep(1.0)  # py-spy attaches before the first request
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        try:
            spy.wait(timeout=60)
        except subprocess.TimeoutExpired:
            spy.kill()
        if spy.returncode not in (0, -signal.SIGINT) and not raw.exists():
            assert spy.stderr is not None
            print(f"py-spy: {spy.stderr.read().decode(errors='replace')[-500:]}")


def top_frames(raw: Path, limit: int = 15) -> str:
    """The frames that hold the most samples: with their callees (the project's and
    Django's frames) and on their own (any leaf)."""
    inclusive: Counter[str] = Counter()
    leaf: Counter[str] = Counter()
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        leaf[frames[-1]] += n
        for frame in set(frames):
            if "agents/" in frame or "agentbuilder/" in frame or "django/" in frame:
                inclusive[frame] += n
    if not total:
        return f"{raw}: no samples"

    def rows(counter: Counter[str]) -> list[list[str]]:
        top = counter.most_common(limit)
        return [[f"{100 * n / total:.0f} %", frame[:150]] for frame, n in top]

    return "\n".join(
        [
            f"{raw}: {total} samples",
            table(["samples", "with callees (project and Django frames)"], rows(inclusive)),
            table(["samples", "own (leaf frames)"], rows(leaf)),
        ]
    )


def compare_in_process(a: str, b: str, count: int) -> list[float]:
    """`experiments_compare` alone, in this process: the comparison's share of a page."""
    from django.db import connection

    from agents.evals.compare import experiments_compare
    from agents.models import Experiment

    first, second = Experiment.objects.get(pk=a), Experiment.objects.get(pk=b)
    times = []
    for _ in range(count):
        started = time.process_time()
        experiments_compare(first, second)
        times.append(time.process_time() - started)
    connection.close()
    return times


def compare_all(
    server: Server, db: Database, s: Setup, a: str, b: str, count: int, profile: Path | None
) -> list[Renders]:
    def raw(name: str) -> Path | None:
        return None if profile is None else profile / f"compare-{name}.txt"

    found: list[Renders] = []
    with httpx.Client(base_url=server.url, timeout=120) as http:
        page = admin_compare_path(s.agent_id)
        if page is None:
            print("the admin has no compare page of experiments yet: the API's alone")
        else:
            admin_login(http, s)
            path = f"{page}?a={a}&b={b}"
            found.append(renders(http, server, db, "admin page", path, count, raw("admin")))
        http.headers["Authorization"] = f"Bearer {s.tokens[0]}"
        http.cookies.clear()
        api = f"/v1/experiments/compare?a={a}&b={b}"
        found.append(renders(http, server, db, "API", api, count, raw("api")))
    return found


# ---------------------------------------------------------------- report


def report(
    base: Invokes, invoke_runs: list[int], trials: list[Trial], pages: list[Renders], n: int
) -> None:
    print(f"\n{n} cases; plain invokes {CLIENTS} at a time")
    print(
        table(
            [
                "path",
                "cases/s",
                "workers CPU/case",
                "server CPU/case",
                "PG CPU/case",
                "CPU/case (ratio's)",
                "x invoke",
                "run p50 ms",
                "run p95 ms",
            ],
            [
                [
                    "plain invoke",
                    "",
                    "",
                    f"{base.server_cpu / max(base.calls, 1) * MS:.1f}",
                    f"{base.pg_cpu / max(base.calls, 1) * MS:.1f}",
                    f"{base.per_call_ms():.1f}",
                    "1.00",
                    f"{percentile(invoke_runs, 50):.0f}",
                    f"{percentile(invoke_runs, 95):.0f}",
                ],
                *[
                    [
                        f"experiment, {t.workers} worker(s), v{t.version}",
                        f"{t.done / t.seconds:.1f}" if t.seconds else "nan",
                        f"{t.per_case_ms('workers'):.1f}",
                        f"{t.per_case_ms('server'):.1f}",
                        f"{t.per_case_ms('postgres'):.1f}",
                        f"{t.per_case_ms('workers', 'postgres'):.1f}",
                        f"{t.per_case_ms('workers', 'postgres') / base.per_call_ms():.2f}",
                        t.summary.get("latencyMs", {}).get("p50"),
                        t.summary.get("latencyMs", {}).get("p95"),
                    ]
                    for t in trials
                ],
            ],
        )
    )
    print(
        "CPU/case (ratio's): the workers' and PostgreSQL's for an experiment, the server's and "
        "PostgreSQL's for an invoke (an experiment's server CPU, its POST and the server's "
        "idle threads, is shown apart)"
    )
    for t in trials:
        shares = " / ".join(f"{c:.1f} s" for c in t.worker_cpu)
        passed = t.summary.get("passRate")
        print(
            f"  {t.workers} worker(s): {t.done}/{t.total} cases in {t.seconds:.1f} s, "
            f"CPU per worker {shares}, pass rate {passed}, scorers {t.summary.get('scorers')}"
        )
    if len(trials) >= 2 and trials[0].seconds and trials[-1].seconds:
        first, last = trials[0], trials[-1]
        ratio = (last.done / last.seconds) / (first.done / first.seconds)
        print(f"{last.workers} workers / {first.workers}: cases/s {ratio:.2f}x")
    worst = max((t.per_case_ms("workers", "postgres") for t in trials), default=0.0)
    if trials:
        verdict = "met" if worst <= 1.2 * base.per_call_ms() else "NOT met"
        print(
            f"CPU per case / plain invoke: at most {worst / base.per_call_ms():.2f}x "
            f"(goal <= 1.2x: {verdict})"
        )
    for r in pages:
        print(
            f"\ncompare, {r.what}, {len(r.wall)} requests one at a time "
            f"({r.size / 1024:.0f} KiB each)"
        )
        print(
            table(
                ["", "p50 ms", "p95 ms", "mean ms"],
                [
                    [
                        name,
                        f"{percentile(values, 50) * MS:.0f}",
                        f"{percentile(values, 95) * MS:.0f}",
                        f"{sum(values) / max(len(values), 1) * MS:.0f}",
                    ]
                    for name, values in (
                        ("server CPU", r.server_cpu),
                        ("PostgreSQL CPU", r.pg_cpu),
                        ("client wall", r.wall),
                    )
                ],
            )
        )
        if r.server_cpu:
            p95 = percentile(r.server_cpu, 95) * MS
            verdict = "met" if p95 <= 300 else "NOT met"
            print(f"server CPU p95 {p95:.0f} ms (goal <= 300 ms: {verdict})")


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument("--cases", type=int, default=None, help="cases (default 1000)")
    parser.add_argument("--workers", default="1,2", help="worker counts, one experiment each")
    parser.add_argument("--concurrency", type=int, default=8, help="threads per worker")
    parser.add_argument("--slots", type=int, default=16, help="the experiments' concurrency")
    parser.add_argument("--renders", type=int, default=30, help="compare requests of each kind")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="a directory: py-spy records the first worker during each experiment and the "
        "server during the compare requests, and the top frames are printed (py-spy's own "
        "CPU then weighs on the figures)",
    )
    options = parser.parse_args()
    require(programs=["redis-server"])
    count = options.cases or (200 if options.quick else 1000)
    if options.profile is not None:
        options.profile.mkdir(parents=True, exist_ok=True)
    cases = cases_of(count)
    print(machine(), flush=True)
    db = prepare(options.db)
    redis, broker, workdir = start_redis()
    try:
        s = setup(cases)
        print(f"scorers: {s.scorers}", flush=True)
        env = {
            **os.environ,
            "LLM_OFFLINE": "true",
            "CELERY_BROKER_URL": broker,
            # The bench logs into the admin over loopback http.
            "SESSION_COOKIE_SECURE": "false",
            "CSRF_COOKIE_SECURE": "false",
        }
        with running(Server(env)) as server:
            asyncio.run(invokes(server, db, s, cases_of(100, count)))  # warm-up, not counted
            half = len(cases) // 2
            base = asyncio.run(invokes(server, db, s, cases[:half]))
            trials = [
                trial(
                    server,
                    db,
                    s,
                    workers=int(w),
                    version=1 + i % 2,
                    env=env,
                    broker=broker,
                    concurrency=options.concurrency,
                    slots=options.slots,
                    profile=options.profile,
                )
                for i, w in enumerate(options.workers.split(","))
            ]
            base.add(asyncio.run(invokes(server, db, s, cases[half:])))
            pages: list[Renders] = []
            in_process: list[float] = []
            if len(trials) >= 2:
                a, b = trials[0].experiment_id, trials[1].experiment_id
                pages = compare_all(server, db, s, a, b, options.renders, options.profile)
                in_process = compare_in_process(a, b, 5)
            problems = server.problem_summary()
        report(base, run_latencies(base.run_ids), trials, pages, count)
        if len(trials) >= 2:
            print(
                f"experiments_compare alone, in the bench's process: "
                f"{percentile(in_process, 50) * MS:.0f} ms CPU (p50 of 5)"
            )
        if options.profile is not None:
            for raw in sorted(options.profile.glob("*.txt")):
                print(f"\n{top_frames(raw)}")
        for line in problems[:10]:
            print(f"  server log: {line}")
        wrong = base.wrong[:5] + [w for t in trials for w in t.wrong]
        wrong += [w for r in pages for w in r.wrong]
        for line in wrong:
            print(f"WRONG: {line}")
        print(f"done; {machine()}")
        return 1 if wrong else 0
    finally:
        stop_process(redis)
        shutil.rmtree(workdir, ignore_errors=True)
        db.close()


if __name__ == "__main__":
    sys.exit(main())
