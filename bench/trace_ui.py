"""The README's trace screenshots (issue 33, "Done when"): a real trace UI, Arize Phoenix, on
loopback, fed over OTLP/HTTP by two platform servers, and its trace view taken in headless
Chromium at 1280 px.

    .venv/bin/python bench/trace_ui.py [--out docs/images] [--db private|shared] [--phoenix URL]

Not a benchmark and not a test (nothing runs it in the suite): it prints the trace it made
and writes two screenshots, `trace-phoenix.png` (Phoenix's trace view) and
`trace-link.png` (the admin's run page, whose trace id links to that view). Phoenix comes
from PyPI at PHOENIX_VERSION into var/traceui-venv, a virtualenv of its own (its packages
are not the project's); where it cannot be installed the script says so and exits 2.

Everything is on 127.0.0.1: Phoenix (its telemetry and external resources off), the two
uvicorn servers, tests/fakes' FakeOpenAI in this process, Chromium. The `caller` server's
tool agent is scripted on FakeOpenAI to search the sample documents (a rag tool), then to
call the function tool `multiply` and the Calculator on the `remote` server's /v1/mcp at
once, then to answer; the remote server runs the Calculator on the offline model. The run
spans both servers in one trace. A RAG agent's run (document-helper) on the remote server
makes a second trace.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import ROOT, Server, free_port, prepare, stop_process

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

PHOENIX_VERSION = "20.26.1"
VENV = ROOT / "var" / "traceui-venv"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
PROJECT = "agentbuilder"  # Phoenix's project, from the resource attribute below
RAG_QUESTION = "Within how many days must I submit an expense report?"
QUESTION = "I am off to a conference for 3 nights. What can I claim for the hotel and meals?"
WIDTH, HEIGHT = 1280, 1140  # the screenshots' size: the trace's 18 spans fit in its tree
# A cap against a hang, not a measure: Phoenix's first start (its migrations) took over
# 2 minutes at a load average of 18 on the 2-core machine.
WAIT_SECONDS = 600.0

# `phoenix serve` binds its OTLP/gRPC port on every interface, and has no setting for it:
# this launcher binds it to loopback before handing over to Phoenix's own main.
LAUNCHER = """
import sys
import grpc.aio

_server = grpc.aio.server


def loopback_server(*args, **kwargs):
    server = _server(*args, **kwargs)
    add = server.add_insecure_port
    server.add_insecure_port = lambda address: add(address.replace("[::]", "127.0.0.1"))
    return server


grpc.aio.server = loopback_server
from phoenix.server.main import main

sys.argv = ["phoenix", "serve"]
sys.exit(main())
"""


def skip(reason: str) -> None:
    print(f"bench/trace_ui.py skipped: {reason}", file=sys.stderr)
    sys.exit(2)


def needs() -> None:
    """Selenium (requirements-dev.txt) and Debian's Chromium, before anything starts."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        skip("it needs selenium: pip install -r requirements-dev.txt")
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        skip("it needs Chromium: apt-get install chromium chromium-driver")


def install_phoenix() -> Path:
    """var/traceui-venv with arize-phoenix at PHOENIX_VERSION: its Python."""
    python = VENV / "bin" / "python"
    if python.exists():
        done = subprocess.run(  # noqa: S603 - our own command line
            [str(python), "-m", "pip", "show", "arize-phoenix"], capture_output=True, text=True
        )
        if f"Version: {PHOENIX_VERSION}" in done.stdout:
            return python
    print(f"installing arize-phoenix=={PHOENIX_VERSION} into {VENV.relative_to(ROOT)}")
    steps = [
        [sys.executable, "-m", "venv", str(VENV)],
        [str(python), "-m", "pip", "install", "--quiet", f"arize-phoenix=={PHOENIX_VERSION}"],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)  # noqa: S603
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            skip(f"arize-phoenix=={PHOENIX_VERSION} could not be installed ({last})")
    return python


@contextlib.contextmanager
def serving(*servers: Server) -> Iterator[None]:
    """The servers started (each given WAIT_SECONDS, as the machine may be busy), then stopped."""
    try:
        for server in servers:
            server.start(timeout=WAIT_SECONDS)
        yield
    finally:
        for server in servers:
            server.close()


@contextlib.contextmanager
def phoenix(python: Path) -> Iterator[str]:
    """`phoenix serve` on loopback ports, with a working directory deleted at the end: its
    URL once /healthz answers."""
    port, workdir = free_port(), tempfile.mkdtemp(prefix="traceui-phoenix-")
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_WORKING_DIR": workdir,
        # Nothing phones home: no usage telemetry, no fonts or assets from the internet
        # (which also turns off the agent assistant's web access).
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
    }
    log = Path(workdir) / "phoenix.log"
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603 - our own command line
            [str(python), "-c", LAUNCHER], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            if process.poll() is not None:
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
                raise SystemExit(f"phoenix serve exited with {process.returncode}:\n{tail}")
            return healthy(url)

        wait(up, "Phoenix to start", log)
        yield url
    finally:
        stop_process(process, timeout=15)
        shutil.rmtree(workdir, ignore_errors=True)


def healthy(url: str) -> bool:
    with contextlib.suppress(httpx.TransportError):
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    return False


def wait(ready: Any, what: str, log: Path | None = None) -> Any:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if found := ready():
            return found
        time.sleep(0.5)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:]) if log else ""
    raise SystemExit(f"gave up waiting for {what}\n{tail}")


# ---------------------------------------------------------------- the platform's side


def fake_model() -> Any:
    """FakeOpenAI answering by how far the run has come: search, then both calculators at
    once, then the answer."""
    from tests.fakes.openai import FakeOpenAI
    from tests.fakes.server import Call, Turn

    class Assistant(FakeOpenAI):
        def next_response(self, recorded: Any) -> Any:
            super().next_response(recorded)  # keeps the record
            results = [m for m in recorded.body.get("messages", []) if m.get("role") == "tool"]
            if not results:
                return Turn(
                    calls=[Call("search_documents", {"query": "hotel and meal limits"})],
                    usage=(412, 18),
                )
            if len(results) == 1:
                return Turn(
                    calls=[
                        Call("multiply", {"a": 3, "b": 180}),
                        Call("Calculator", {"message": "What is 3 times 60?"}),
                    ],
                    usage=(1286, 41),
                )
            answer = (
                "Hotels are capped at 180 euros a night and meals at 60 euros a day, "
                "so for 3 nights: up to 540 euros for the hotel and 180 euros for meals."
            )
            return Turn(text=[answer], usage=(1391, 37))

    return Assistant()


def platform_data(remote_port: int) -> tuple[str, str, str, str]:
    """The dev set-up's agents and documents, and the caller's tool agent: its id, the
    document-helper's id, a token for both servers, the admin's password."""
    password = secrets.token_urlsafe(16)
    devsetup = [sys.executable, "manage.py", "devsetup", "-v", "0"]
    admin_env = {**os.environ, "ADMIN_USERNAME": "admin", "ADMIN_PASSWORD": password}
    subprocess.run(devsetup, cwd=ROOT, env=admin_env, check=True)  # noqa: S603
    # The admin's pages with their styles: uvicorn serves STATIC_ROOT (whitenoise).
    collect = [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"]
    subprocess.run(collect, cwd=ROOT, check=True)  # noqa: S603
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agents.access.environments import DEFAULT_ENVIRONMENT
    from agents.access.tokens import token_encode
    from agents.mcp_registry.services import mcp_server_create
    from agents.models import Agent, Environment, McpServer
    from agents.services.agents import agent_create

    admin = get_user_model().objects.get(username="admin")
    admin.set_password(password)  # a shared database's admin from an earlier run
    admin.save(update_fields=["password"])
    token = token_encode(user_id=admin.pk, environment_id=None)[0]
    env = Environment.objects.get(name=DEFAULT_ENVIRONMENT)
    remote = mcp_server_create(
        user=admin,
        environment=env,
        name=unused(McpServer.objects.filter(environment=env), "remote-agentbuilder"),
        url=f"http://127.0.0.1:{remote_port}/v1/mcp",
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )
    config = {
        "llmModelId": "openai/gpt-4o-mini",
        "systemPrompt": "You answer employees' questions on company policy.",
        "tools": [
            {
                "toolType": "rag",
                "name": "search_documents",
                "description": "Searches the company's policies and handbooks",
            },
            {
                "toolType": "function",
                "name": "multiply",
                "description": "Multiplies two numbers",
                "funcName": "multiply",
            },
            {
                "toolType": "mcp",
                "mcpServerReferences": [
                    {"id": str(remote.pk), "toolConfiguration": {"allowedTools": ["Calculator"]}}
                ],
            },
        ],
    }
    agent, _ = agent_create(
        user=admin,
        environment=env,
        name=unused(Agent.objects.filter(environment=env, deleted_at__isnull=True), "expenses"),
        agent_type="tool",
        config=config,
    )
    helper = Agent.objects.get(environment=env, name="document-helper", deleted_at__isnull=True)
    connection.close()
    return str(agent.pk), str(helper.pk), token, password


def unused(rows: Any, name: str) -> str:
    """`name`, or `name-<n>` where a shared database has it from an earlier run."""
    taken = set(rows.values_list("name", flat=True))
    return next(n for n in (name, *(f"{name}-{i}" for i in range(2, 10_000))) if n not in taken)


def invoke(server: Server, agent_id: str, token: str, question: str) -> str:
    """One non-streamed invoke: the trace id its `traceparent` answer header names."""
    response = httpx.post(
        f"{server.url}/v1/agents/{agent_id}/versions/latest/invoke",
        json={"messages": [{"role": "user", "content": question}]},
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )
    if response.status_code != 200:
        raise SystemExit(f"invoke answered {response.status_code}: {response.text[:500]}")
    said = [
        part["text"]
        for item in response.json()["output"]
        if item["type"] == "message"
        for part in item["content"]
    ]
    print(f"  answer: {' '.join(said)[:200]}")
    return response.headers["traceparent"].split("-")[1]


def run_of(trace_id: str, agent_id: str) -> str:
    from django.db import connection

    from agents.models import Run

    run = Run.objects.filter(trace_id=trace_id, agent_id=agent_id).values_list("pk", flat=True)
    found = str(run.get())
    connection.close()
    return found


def spans_in(url: str, trace_id: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{url}/v1/projects/{PROJECT}/spans/otlpv1",
        params={"trace_id": trace_id, "limit": 1000},
        timeout=10,
    )
    return list(response.json().get("data", [])) if response.status_code == 200 else []


def trace_held(url: str, trace_id: str, roots: set[str]) -> list[dict[str, Any]] | None:
    """The trace's spans once Phoenix has every run's root span and nothing more came in
    since the last look (the two servers export in their own batches)."""
    spans = spans_in(url, trace_id)
    names = {span["name"] for span in spans}
    if not roots <= names:
        return None
    time.sleep(2)
    again = spans_in(url, trace_id)
    return again if len(again) == len(spans) else None


def print_tree(spans: list[dict[str, Any]]) -> None:
    by_parent: dict[str | None, list[dict[str, Any]]] = {}
    ids = {span["span_id"] for span in spans}
    for span in spans:
        parent = span.get("parent_span_id") or None
        by_parent.setdefault(parent if parent in ids else None, []).append(span)

    def show(span: dict[str, Any], depth: int) -> None:
        took = (int(span["end_time_unix_nano"]) - int(span["start_time_unix_nano"])) / 1e6
        service = next(
            (
                a["value"].get("string_value")
                for a in span.get("resource", {}).get("attributes", [])
                if a.get("key") == "service.name"
            ),
            "",
        )
        print(f"  {'  ' * depth}{span['name']}  {took:.1f} ms  {service}".rstrip())
        for child in sorted(by_parent.get(span["span_id"], []), key=start):
            show(child, depth + 1)

    for root in sorted(by_parent.get(None, []), key=start):
        show(root, 0)


def start(span: dict[str, Any]) -> int:
    return int(span["start_time_unix_nano"])


# ---------------------------------------------------------------- the screenshots


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    # A viewport of exactly WIDTH by HEIGHT (a window's size includes its frame).
    metrics = {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    return driver


def shoot_trace(driver: Any, url: str, trace_id: str, out: Path, select: str) -> None:
    """Phoenix's trace view of `trace_id`: the tree widened so that it nests and draws its
    timing bars (Phoenix lays a narrow tree out flat), the span named `select` picked and
    its attributes shown."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    def drag(handle: Any, dx: int) -> None:
        ActionChains(driver).move_to_element(handle).click_and_hold().move_by_offset(
            dx // 2, 0
        ).move_by_offset(dx - dx // 2, 0).release().perform()

    def shown(xpath: str) -> Any:
        return wait(
            lambda: [e for e in driver.find_elements(By.XPATH, xpath) if e.is_displayed()],
            f"{xpath} on Phoenix's trace page",
        )[0]

    driver.get(f"{url}/redirects/traces/{trace_id}")
    span = shown(f"//*[text()='{select}']")
    driver.find_element(By.CSS_SELECTOR, "button[aria-label='Collapse side navigation']").click()
    drag(driver.find_element(By.CSS_SELECTOR, "[aria-label='Resize drawer']"), -300)
    drag(driver.find_element(By.CSS_SELECTOR, "[role=separator][aria-controls=trace-tree]"), 260)
    span.click()
    tab = shown("//*[@role='tab' and normalize-space()='Attributes']")
    tab.click()
    shown("//td[contains(., 'gen_ai.tool.call.result')]")
    ActionChains(driver).move_to_element(tab).perform()  # no span's hover card in the picture
    time.sleep(1)  # the last layout settles; nothing to wait on
    driver.save_screenshot(str(out))


def shoot_run_page(driver: Any, server: Server, run_id: str, password: str, out: Path) -> str:
    """The admin's run page with its trace link; the link's target."""
    from selenium.webdriver.common.by import By

    driver.get(f"{server.url}/admin/login/?next=/admin/agents/run/{run_id}/change/")
    driver.find_element(By.ID, "id_username").send_keys("admin")
    driver.find_element(By.ID, "id_password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "input[type=submit], button[type=submit]").click()
    link = wait(lambda: driver.find_elements(By.ID, "run-trace-link"), "the run page's trace link")[
        0
    ]
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
    time.sleep(0.5)
    driver.save_screenshot(str(out))
    return str(link.get_attribute("href"))


def follow(driver: Any, href: str, trace_id: str) -> str:
    """Where the run page's trace link leads, once Phoenix shows that trace there."""
    from selenium.webdriver.common.by import By

    driver.get(href)
    wait(
        lambda: (
            f"/traces/{trace_id}" in driver.current_url
            and driver.find_elements(By.XPATH, f"//*[contains(text(), '{trace_id}')]")
        ),
        "the trace link to open the trace in Phoenix",
    )
    return str(driver.current_url)


def servers(ui: str, fake: Any) -> tuple[Server, Server]:
    """The remote (offline model, its /v1/mcp called) and the caller (FakeOpenAI), both
    exporting to Phoenix, message content included, into one Phoenix project."""
    exporting = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": ui,  # the exporter adds /v1/traces, Phoenix's path
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={PROJECT}",
        "OTEL_TRACE_URL_TEMPLATE": f"{ui}/redirects/traces/{{trace_id}}",
        "MCP_ALLOWED_HOSTS": "127.0.0.1",
    }
    remote = Server({**exporting, "LLM_OFFLINE": "true", "OTEL_SERVICE_NAME": "agentbuilder-mcp"})
    caller = Server(
        {
            **exporting,
            "LLM_OFFLINE": "false",
            "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_API_KEY": "traceui-key",
        }
    )
    return remote, caller


@contextlib.contextmanager
def traces(ui: str, fake: Any) -> Iterator[tuple[str, str, Server, str]]:
    """The two runs made, their traces held by Phoenix and printed: the tool agent's trace
    id, its run's id, the caller server (serving until the block ends), the admin's
    password."""
    remote, caller = servers(ui, fake)
    agent_id, helper_id, token, password = platform_data(remote.port)
    with serving(remote, caller):
        print("tool agent (rag tool, function tool, MCP tool on the remote):")
        trace_id = invoke(caller, agent_id, token, QUESTION)
        print("RAG agent document-helper (on the remote, offline model):")
        rag_trace = invoke(remote, helper_id, token, RAG_QUESTION)
        roots = {"invoke_agent Calculator"}
        spans = wait(lambda: trace_held(ui, trace_id, roots), "the trace in Phoenix")
        rag = wait(lambda: trace_held(ui, rag_trace, set()), "the RAG trace in Phoenix")
        for shown, held in ((trace_id, spans), (rag_trace, rag)):
            print(f"\ntrace {shown}: {len(held)} spans")
            print_tree(held)
        yield trace_id, run_of(trace_id, agent_id), caller, password


def screenshots(
    ui: str, trace_id: str, run_id: str, caller: Server, password: str, out: Path
) -> None:
    driver = browser()
    try:
        shot = out / "trace-phoenix.png"
        shoot_trace(driver, ui, trace_id, shot, "execute_tool Calculator")
        page = out / "trace-link.png"
        href = shoot_run_page(driver, caller, run_id, password, page)
        opened = follow(driver, href, trace_id)
        print(f"\nrun {run_id}'s trace link {href} opened {opened}")
    finally:
        driver.quit()
    for path in (shot, page):
        print(f"wrote {path} ({path.stat().st_size // 1024} KB)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--db", choices=("private", "shared"), default="private")
    parser.add_argument(
        "--phoenix", metavar="URL", help="a Phoenix already running on loopback, not a new one"
    )
    args = parser.parse_args()
    needs()
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ["MCP_ALLOWED_HOSTS"] = "127.0.0.1"  # the caller's MCP server is on loopback
    started = contextlib.nullcontext(args.phoenix) if args.phoenix else phoenix(install_phoenix())
    with started as ui:
        print(f"Phoenix {PHOENIX_VERSION} on {ui}")
        db = prepare(args.db)
        try:
            with fake_model() as fake, traces(ui, fake) as made:
                screenshots(ui, *made, args.out)
        finally:
            db.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
