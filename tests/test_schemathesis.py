"""Every operation of the served OpenAPI document, driven by schemathesis with its default
checks (but two, see CONFIG): no server error, only documented statuses and content types,
answers and headers that match their schemas, 401 without the token.

The schema is loaded from the WSGI app at /v1/schema, and requests go to it in-process, so
each operation's examples run inside that test's transaction against a real PostgreSQL.
The caller is an owner of the default environment with real agents of each type, a
document, a run in a thread and a registered MCP server; path parameters name those rows
(generated ids would only ever meet the 400/404 of an unknown id). Bounded and
deterministic: a few examples per operation, with the offline model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import hypothesis
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from schemathesis import Case

from agents.mcp.servers import mcp_server_create
from agents.models import Agent
from agents.services import alias_set
from agents.tokens import token_encode
from retrieval.services import document_create, document_ingest
from tests.agents.mcp.test_mcp import serve
from tests.conftest import client_for
from tests.live import LiveApp

CONFIG = schemathesis.Config.from_dict(
    {
        "generation": {"max-examples": 8, "deterministic": True, "database": "none"},
        # The coverage phase's boundary cases run to hundreds a body: minutes, not seconds.
        "phases": {"coverage": {"enabled": False}, "stateful": {"enabled": False}},
        "checks": {
            # Left out on purpose: pydantic's lax mode takes 0/1 for booleans and "7" for
            # numbers (form bodies depend on it), and rules beyond JSON Schema refuse
            # schema-valid bodies (a config that does not fit its agent type, a tool
            # message without the call it answers).
            "positive_data_acceptance": {"enabled": False},
            "negative_data_rejection": {"enabled": False},
        },
    }
)
# Django's own WSGI handler: agentbuilder.wsgi also starts the process's lease thread, whose
# connection would work outside the test's transaction.
schema = schemathesis.openapi.from_wsgi(
    "/v1/schema?format=json", get_wsgi_application(), config=CONFIG
)

EXAMPLES: Counter[str] = Counter()
ALIAS = "prod"


@dataclass(frozen=True)
class World:
    token: str
    tool: Agent
    rag: Agent
    task: Agent
    victim: Agent  # the agent DELETE and PATCH may change
    document_id: str
    doomed_document_id: str
    run_id: str
    thread_id: str
    server_id: str
    doomed_server_id: str

    def path_parameters(self, case: Case) -> dict[str, str]:
        method, path = case.method.upper(), case.path
        deleting = method == "DELETE"
        values = {
            "agentId": str(self._agent(method, path, case).pk),
            "versionId": "latest",
            "documentId": self.doomed_document_id if deleting else self.document_id,
            "runId": self.run_id,
            "threadId": self.thread_id,
            "serverId": self.doomed_server_id if deleting else self.server_id,
            "model": self.tool.name,
            # An alias of the tool and RAG agents: the first DELETE deletes it.
            "name": ALIAS,
        }
        generated = case.path_parameters or {}
        return {name: values.get(name, value) for name, value in generated.items()}

    def _agent(self, method: str, path: str, case: Case) -> Agent:
        if method in ("DELETE", "PATCH") and path == "/v1/agents/{agentId}":
            return self.victim
        if "invoke-task" in path:
            return self.task
        # The chat routes serve tool and RAG agents: alternate, deterministically.
        return self.rag if len(repr(case.body)) % 2 else self.tool


@contextmanager
def kept_connection() -> Iterator[None]:
    """Requests go straight to the WSGI app, not through Django's test client: keep Django
    from closing the test's connection (and its transaction) around each, as the client
    does (and, like it, reconnects afterwards: so this is entered after the last one)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[LiveApp]:
    server = serve()
    yield server
    server.stop()


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    print(f"\nschemathesis: {len(EXAMPLES)} operations, {EXAMPLES.total()} examples")
    for label, count in EXAMPLES.most_common():
        print(f"  {count:5d} {label}")


@pytest.fixture
def world(owner: Any, make_agent: Any, settings: Any, mcp_server: Any) -> Iterator[World]:
    settings.MCP_ALLOWED_HOSTS = ["127.0.0.1"]
    env = make_agent().environment
    tool = Agent.objects.get(name="calc")
    rag, task = make_agent("docs", "rag"), make_agent("summary", "task")
    victim = make_agent("victim")
    for aliased in (tool, rag):
        alias_set(user=owner, agent=aliased, name=ALIAS, version_number=1)
    documents = [
        document_create(
            environment_id=env.pk,
            user=owner,
            title=title,
            data=b"The warranty covers parts and labour for two years.",
            media_type="text/plain",
            metadata={"year": 2024},
        )
        for title in ("Warranty", "Old warranty")
    ]
    for document in documents:
        document_ingest(document_id=document.pk)
    answered = client_for(owner).post(
        f"/v1/agents/{tool.pk}/versions/latest/invoke",
        {"messages": [{"role": "user", "content": "What is 3 times 5?"}], "threadId": "t-1"},
        format="json",
    )
    assert answered.status_code == 200, answered.content
    servers = [
        mcp_server_create(user=owner, environment=env, name=name, url=mcp_server.url)
        for name in ("tools", "doomed")
    ]
    token, _ = token_encode(user_id=owner.pk, environment_id=None)
    with kept_connection():
        yield World(
            token=token,
            tool=tool,
            rag=rag,
            task=task,
            victim=victim,
            document_id=str(documents[0].pk),
            doomed_document_id=str(documents[1].pk),
            run_id=answered["X-Run-Id"],
            thread_id="t-1",
            server_id=str(servers[0].pk),
            doomed_server_id=str(servers[1].pk),
        )


@schema.parametrize()
# Requests reach Django through WSGI, which drains an async stream whole: what a test wants.
@pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume asynchronous iterators")
# One world per operation, shared by its examples on purpose: it is read, and what they
# write is rolled back with the test.
@hypothesis.settings(
    suppress_health_check=[
        hypothesis.HealthCheck.function_scoped_fixture,
        hypothesis.HealthCheck.too_slow,
    ]
)
def test_operation_conforms_to_the_document(case: Case, world: World) -> None:
    case.path_parameters = world.path_parameters(case)
    if case.headers and "X-Environment" in case.headers:
        # An unknown environment is a 404 before anything else: name the world's.
        case.headers["X-Environment"] = "default"
    EXAMPLES[case.operation.label] += 1
    case.call_and_validate(headers={"Authorization": f"Bearer {world.token}"})
