"""The test tree's own rules (docs/architecture.md#tests): what more than one test module uses
lives in tests/support (or tests/fakes, the fake servers), so no test module, conftest or
support module imports from a test module or from a conftest other than the root one; a
helper kept inside one test module and borrowed by another hides a dependency between two
suites that either could break."""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
TESTS = ROOT / "tests"


def python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "node_modules" not in p.parts)


def parsed(source: str) -> ast.Module:
    """`ast.parse`, once more if CPython 3.11's AST conversion reports its recursion depth
    mismatched: that depth is kept in state the interpreter shares across threads
    (CPython gh-106905), and a thread of this test process (a run's runner, a delivery
    pass) may be building AST objects at the same moment (pydantic reads class sources
    with `ast` when it defines models). Seen once in a busy CI run; nothing of ours."""
    try:
        return ast.parse(source)
    except SystemError:
        return ast.parse(source)


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, `from a.b import c` counted as both a.b and a.b.c (c may
    be a module)."""
    found: set[str] = set()
    for node in ast.walk(parsed(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def is_test_module(module: str) -> bool:
    """A test module, or a conftest below the root one: neither is a place to import from."""
    last = module.rsplit(".", 1)[-1]
    return module.startswith("tests.") and (
        last.startswith("test_") or (last == "conftest" and module != "tests.conftest")
    )


def test_no_test_module_imports_from_another_test_module() -> None:
    borrowed = {
        f"{path.relative_to(ROOT)} imports {module}"
        for path in python_files()
        for module in imported_modules(path)
        if is_test_module(module)
    }
    assert not borrowed, "move what is shared into tests/support: " + "; ".join(sorted(borrowed))


# The suites under the mirrored trees that are not one module's tests, each with what it
# spans. A new test module is named after its source module (tests/<path>/test_<module>.py,
# or test_<package>.py for a package as a whole) or is added here with its reason.
BEHAVIOUR_SUITES: dict[str, str] = {
    "agents/evals/test_views.py": (
        "the evaluations' API end to end (agents/evals/api_datasets.py, api_experiments.py)"
    ),
    "agents/evals/test_eval_command.py": (
        "`manage.py agents eval`: an experiment run by the command, its JUnit report, exit 1"
    ),
    "agents/access/oauth/test_mcp_sdk_client.py": (
        "the mcp SDK's OAuth client end to end: discovery, registration, consent in Chromium, "
        "tools, refresh"
    ),
    "agents/budgets/test_concurrency.py": (
        "budgets under concurrent runs on a live server: the gate, the counter and the API"
    ),
    # tests/agents: the REST API and its routes end to end
    "agents/api/test_alias_delete_committed.py": (
        "aliases' delete in a committed transaction: API, service and the database's constraint"
    ),
    "agents/api/test_answers.py": "the invoke answer's shape: native encoder, run record and usage",
    "agents/api/test_attachments.py": (
        "attachments from the invoke request through the catalog check to the provider"
    ),
    "agents/api/test_call_depth.py": (
        "call depth across agents calling agents: header, runs and runtime"
    ),
    "agents/api/test_context_guardrails.py": (
        "context guardrails on retrieved passages, through the invoke route"
    ),
    "agents/api/test_disconnect.py": (
        "a client leaving a stream: ASGI, streaming path and run recording"
    ),
    "agents/api/test_document_exactness.py": "a document's bytes from upload to a RAG answer",
    "agents/api/test_documented_answers.py": (
        "every answer docs/api.md shows, produced by the routes"
    ),
    "agents/api/test_examples.py": "the example agents on every backend, end to end",
    "agents/api/test_failures.py": (
        "failure codes from provider, runtime and protocol to the run and the wire"
    ),
    "agents/api/test_guardrails.py": "guardrails in a run: catalog, engines, guard and encoders",
    "agents/api/test_local_model.py": "the offline model behind the invoke routes",
    "agents/api/test_privacy.py": (
        "what a run records and returns of a caller's data, across routes"
    ),
    "agents/api/test_rag.py": "RAG end to end: retrieval, the RAG flow and customOutputs",
    "agents/api/test_refusals.py": "requests refused before a run starts, across routes",
    "agents/api/test_request_threads.py": (
        "a request's threads: ASGI, database helpers and the stream"
    ),
    "agents/api/test_run_liveness.py": "leases, sweeps and cancels of runs across processes",
    "agents/api/test_run_cost.py": (
        "a run's cost: provider usage over the wire, catalog prices, steps and run record"
    ),
    "agents/api/test_run_steps.py": "a run's steps from the trace to GET /v1/runs",
    "agents/api/test_run_fallbacks.py": (
        "fallback models end to end: both SDKs against the fake servers, each attempt a step"
    ),
    "agents/api/test_template_limits.py": "template limits through the invoke routes",
    "agents/api/test_threads.py": "threads of messages across invoke calls",
    # tests/agents: the admin
    "agents/admin/test_alias_delete_committed.py": (
        "the aliases page's delete in a committed transaction"
    ),
    "agents/admin/test_playground.py": "the playground page: admin view, its protocol and runs",
    "agents/admin/test_playground_browser.py": (
        "the playground in a real browser: admin page, script and stream"
    ),
    "agents/admin/test_studio_browser.py": "the admin's pages in a real browser",
    "agents/admin/test_usage_browser.py": "the usage page in a real browser: charts, filters",
    "agents/admin/test_runs_browser.py": (
        "the runs list, a run's page, the thread page and the agent list at 1280 px"
    ),
    "agents/access/sso/test_sso_browser.py": (
        "single sign-on in a real browser against a real OpenID provider: page, views, backend"
    ),
    # tests/agents: evaluations
    "agents/evals/test_experiments_browser.py": (
        "experiments in a real browser: the form, the progress bar, cancel and compare"
    ),
    "agents/evals/test_admin_browser.py": (
        "datasets in a real browser: the case table, a run's page and the playground"
    ),
    # tests/agents: whole-app behaviour
    "agents/test_bad_input.py": "malformed input on every route",
    "agents/test_concurrency.py": "concurrent writes through services and the database",
    "agents/test_config_validation.py": (
        "agent configs through the API: pydantic models, JSON Schemas, services"
    ),
    "agents/test_devsetup.py": "`manage.py devsetup` and the examples it creates, invoked",
    "agents/test_list_queries.py": "the query count of every list endpoint",
    "agents/test_schema_refs.py": "JSON Schema references across configs, tools and MCP",
    "agents/test_smoke_api.py": "a first walk through the API",
    # tests/agents: the runtime, providers and runs
    "agents/runtime/test_client_tools.py": (
        "client tools: the spec's tool choice, the toolset and the tool loop"
    ),
    "agents/runtime/test_context_stage.py": (
        "the context stage: tools, retrieval, guard and a detector in one run"
    ),
    "agents/llm/test_attachments.py": "attachments in both providers' wire formats",
    "agents/config_files/test_hostile_files.py": (
        "hostile YAML against the importer and the document reader"
    ),
    "agents/runs/test_playground_stop.py": (
        "the playground's stop: protocol, live recording and leases"
    ),
    # tests/agents: protocols end to end against a live server
    "agents/protocols/a2a/test_hostile_params.py": "any JSON as A2A params: request, view and runs",
    "agents/protocols/a2a/test_js_sdk.py": "the A2A JavaScript SDK against a live server",
    "agents/protocols/a2a/test_jsonrpc.py": (
        "A2A's JSON-RPC methods: request, encoder, view and runs"
    ),
    "agents/protocols/a2a/test_sdk_client.py": "the a2a-sdk client against a live server",
    "agents/protocols/a2a/test_sdk_full.py": "the a2a-sdk's whole surface against a live server",
    "agents/protocols/frameworks/test_frameworks.py": (
        "agent frameworks' clients against a live server"
    ),
    "agents/protocols/mcp_server/test_call_depth.py": "call depth through our MCP server and runs",
    "agents/protocols/mcp_server/test_mcp_hygiene.py": (
        "/v1/mcp's host, origin and OAuth checks on the ASGI mount"
    ),
    "agents/protocols/mcp_server/test_mcp_server.py": (
        "the mcp SDK's client against our MCP server, live"
    ),
    "agents/protocols/test_openai_base.py": "the openai SDK against /v1/openai, live",
    "agents/protocols/test_openai_semantics.py": (
        "/v1/openai's semantics: encoder, SDK accumulator and routes"
    ),
    # tests/retrieval
    "retrieval/admin/test_documents_browser.py": "the documents admin in a real browser",
    "retrieval/test_celery_worker.py": "ingestion through a real Celery worker and Redis",
    "retrieval/test_ingestion_recovery.py": "ingestion that resumes after a process dies",
    "retrieval/test_storage.py": "chunks on disk: the chunk model and search's SQL",
    # tests/guardrails
    "guardrails/test_corpora.py": "the shipped guardrail configurations against the corpora",
}
MIRRORED = ("agents", "guardrails", "retrieval", "agentbuilder")


def mirrors_source(test: Path) -> bool:
    """tests/<path>/test_<name>.py tests <path>/<name>.py, or the package <path>/<name>/."""
    relative = test.relative_to(TESTS)
    source = ROOT / relative.parent / relative.name.removeprefix("test_")
    return source.is_file() or (source.with_suffix("") / "__init__.py").is_file()


def test_every_test_module_is_named_after_its_source_or_listed() -> None:
    tests = {
        str(path.relative_to(TESTS)): path
        for top in MIRRORED
        for path in (TESTS / top).rglob("test_*.py")
        if "node_modules" not in path.parts
    }
    adrift = sorted(
        name
        for name, path in tests.items()
        if not mirrors_source(path) and name not in BEHAVIOUR_SUITES
    )
    assert not adrift, "name it after its source module or list it in BEHAVIOUR_SUITES: " + (
        ", ".join(adrift)
    )
    stale = sorted(set(BEHAVIOUR_SUITES) - set(tests))
    assert not stale, "listed but gone (drop it from BEHAVIOUR_SUITES): " + ", ".join(stale)
