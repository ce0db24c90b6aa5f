"""Every operation of the served OpenAPI document, driven by schemathesis in all four phases
(examples, coverage, fuzzing, stateful scenarios) with every check: no server error, only
documented statuses, methods and content types, answers, headers and streamed events that
match their schemas, 401 without the token, schema-invalid requests refused and valid ones
taken (but for the operations CONFIG names, and why).

The schema is loaded from the WSGI app at /v1/schema, and requests go to it in-process, so
each operation's examples run inside that test's transaction against a real PostgreSQL.
The caller is an owner of the default environment with real agents of each type, a
document, a run in a thread and a registered MCP server; path parameters name those rows
(generated ids would only ever meet the 400/404 of an unknown id). Bounded and
deterministic: a few examples per operation and a few scenarios, with the offline model;
`make schemathesis` runs more and reports every failure by kind.
"""

from __future__ import annotations

import os
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import hypothesis
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from schemathesis import Case
from schemathesis.core import NOT_SET
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.core.parameters import ParameterLocation
from schemathesis.core.result import Ok
from schemathesis.generation.modes import GenerationMode
from schemathesis.generation.stateful.state_machine import StepInput, StepOutput
from schemathesis.specs.openapi.stateful.links import OpenApiLink

from agentbuilder.api.openapi import LINKS
from agents.access.tokens import token_encode
from agents.mcp_registry.services import mcp_server_create
from agents.models import Agent, AgentVersion, AliasChange, Run
from agents.services.aliases import alias_set
from retrieval.indexing import document_ingest
from retrieval.services import document_create
from tests.conftest import client_for
from tests.fakes.mcp import serve
from tests.live import LiveApp

# The budget: CI's by default (a few minutes on 2 cores); `make schemathesis` raises it.
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "8"))
# `make schemathesis` counts every failure and reports them by kind rather than stopping at
# each operation's first (the test still fails at the end if any was found).
COLLECT = os.environ.get("SCHEMATHESIS_COLLECT") == "1"
# Stateful: scenarios of up to SCENARIO_STEPS calls chained by the links the document
# declares (agentbuilder.api.openapi.LINKS). Link inference stays off: it added about fifteen
# guessed links to a created agent, and scenarios seldom went past the create.
SCENARIOS = int(os.environ.get("SCHEMATHESIS_SCENARIOS", "25"))
SCENARIO_STEPS = int(os.environ.get("SCHEMATHESIS_SCENARIO_STEPS", "6"))
# positive_data_acceptance stays off where a schema-valid body is still refused by rules
# that JSON Schema cannot state, each a 400 at the path of the field (docs/api.md#errors):
# a config's model id, function, guardrail, MCP server and task agent must exist in the
# catalogs and the environment, and its schemas and template must hold together
# (docs/api.md#configs); a conversation must be one a model takes (a tool result answers a
# call, `model` names an agent of the caller's, task `inputs` fit the agent's inputSchema,
# an HxQL query parses, guardrails are in the catalog: docs/api.md#invocation); an MCP
# server's URL must pass the network policy; an alias names a version the agent has; a
# document's file must be of a readable type; the token endpoint's fields go together by
# grant type; a budget has a limit, and its scope's object is one of the environment's
# (docs/api.md#budgets); a gate's dataset, an approval's request, an experiment's scorers
# and a schedule's cron must exist or parse, a webhook's URL must be http(s) and pass the
# network policy, and a promptfoo file naming a new dataset needs its agent type
# (docs/api.md#evaluations, #schedules, #webhooks, #tool-approvals). Reads and deletes keep it.
SEMANTIC_WRITES = [
    "POST /v1/auth/token",
    "POST /v1/agents",
    "POST /v1/agents/{agentId}/versions",
    "POST /v1/agents/versions/batch-get",
    "PUT /v1/agents/{agentId}/aliases/{name}",
    "POST /v1/agents/{agentId}/versions/{versionId}/chat/completions",
    "POST /v1/chat/completions",
    "POST /v1/openai/chat/completions",
    "POST /v1/agents/{agentId}/versions/{versionId}/process",
    "POST /v1/agents/{agentId}/versions/{versionId}/respond",
    "POST /v1/agents/{agentId}/versions/{versionId}/invoke",
    "POST /v1/agents/{agentId}/versions/{versionId}/invoke-stream",
    "POST /v1/agents/{agentId}/versions/{versionId}/invoke-task",
    "POST /v1/agents/{agentId}/versions/{versionId}/invoke-task-stream",
    "POST /v1/documents",
    "POST /v1/search",
    "POST /v1/mcp-servers",
    "PATCH /v1/mcp-servers/{serverId}",
    "POST /v1/budgets",
    "PATCH /v1/budgets/{budgetId}",
    "PUT /v1/agents/{agentId}/aliases/{name}/gate",
    "POST /v1/agents/{agentId}/schedules",
    "POST /v1/agents/{agentId}/webhooks",
    "POST /v1/datasets/import/promptfoo",
    "POST /v1/experiments",
    "POST /v1/runs/{runId}/approvals",
]
# A usage report's period must end after it starts and span at most 366 days
# (docs/api.md#usage), and so must the audit log's `from` and `to`: bounds JSON Schema
# cannot relate. Any other query they take.
PERIODS = ["GET /v1/usage", "GET /v1/audit"]
# negative_data_rejection stays off where pydantic's lax mode still coerces what the document
# refuses, in these bodies' numbers: `false` for an integer (`seed`, `adjacentChunkRange`,
# `metadata.turn_index`, as a full run found) and "7" for 7. Booleans are strict everywhere
# (StrictBool); strict numbers in these bodies are left to a later change.
LAX_NUMBERS = [
    "POST /v1/agents/{agentId}/versions/{versionId}/chat/completions",
    "POST /v1/chat/completions",
    "POST /v1/openai/chat/completions",
    "POST /v1/agents/{agentId}/versions/{versionId}/process",
    "POST /v1/agents/{agentId}/versions/{versionId}/respond",
    "POST /v1/agents/{agentId}/versions/{versionId}/invoke",
    "POST /v1/agents/{agentId}/versions/{versionId}/invoke-stream",
    "POST /v1/search",
]


def names(labels: list[str]) -> str:
    return "^(" + "|".join(re.escape(label) for label in labels) + ")$"


CONFIG = schemathesis.Config.from_dict(
    {
        "generation": {"max-examples": MAX_EXAMPLES, "deterministic": True, "database": "none"},
        "phases": {
            "examples": {"enabled": True},
            "coverage": {"enabled": True},
            "fuzzing": {"enabled": True},
            "stateful": {
                "enabled": True,
                "max-steps": SCENARIO_STEPS,
                "inference": {"algorithms": []},
            },
        },
        "checks": {
            "positive_data_acceptance": {"enabled": True},
            "negative_data_rejection": {"enabled": True},
        },
        "operations": [
            {
                "include-name-regex": names(SEMANTIC_WRITES + PERIODS),
                "checks": {"positive_data_acceptance": {"enabled": False}},
            },
            {
                "include-name-regex": names(LAX_NUMBERS),
                "checks": {"negative_data_rejection": {"enabled": False}},
            },
        ],
    }
)
# Django's own WSGI handler: agentbuilder.wsgi also starts the process's lease thread, whose
# connection would work outside the test's transaction.
schema = schemathesis.openapi.from_wsgi(
    "/v1/schema?format=json", get_wsgi_application(), config=CONFIG
)

# The stateful scenarios walk the agents' operations, where the document's links are. Over
# every operation, each new route took a share of the scenarios' first steps: with the
# draws derandomized, whether any scenario went past creating an agent then turned on
# which routes the document had that day (13 agents made and walked on one commit, 2 made
# and none walked on its parent, which only added routes elsewhere).
AGENT_OPERATIONS = schema.include(path_regex=r"^/v1/agents")

EXAMPLES: Counter[str] = Counter()
PHASES: Counter[str] = Counter()
FAILURES: Counter[str] = Counter()
SAMPLES: dict[str, str] = {}  # each kind's first message, for the report
ALIAS = "prod"
WALK = ("created", "versioned", "aliased", "answered", "deleted")
# Requests the world's agents answer (the walk's calls, where a link led to them).
ANSWERABLE: dict[str, dict[str, Any]] = {
    "agents_invoke": {"messages": [{"role": "user", "content": "What is 3 times 5?"}]},
    "agents_invoke_task": {"inputs": {"text": "The warranty covers parts.", "audience": "all"}},
}


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
        generated = case.path_parameters or {}
        if negative(case, ParameterLocation.PATH):
            return dict(generated)  # a malformed id on purpose: its 400 is the point
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
        return {name: values.get(name, value) for name, value in generated.items()}

    def fill_body(self, case: Case, *, linked: bool) -> None:
        """What the scenarios' writes need beyond their schemas for the walk to go on (the
        rules SEMANTIC_WRITES lists): a config whose model, tools and schemas the platform
        has (the world's agent's of the type asked), a version that copies the latest, an
        alias pointing at a version the agent has; and, where a link led, a question the
        agent answers. Anything else stays generated."""
        if not isinstance(case.body, dict) or negative(case, ParameterLocation.BODY):
            return
        operation = case.operation.definition.raw.get("operationId")
        if linked and operation in ANSWERABLE:
            case.body = dict(ANSWERABLE[operation])
        if operation == "agents_create":
            by_type = {agent.agent_type: agent for agent in (self.tool, self.rag, self.task)}
            model = by_type.get(str(case.body.get("agentType")), self.tool)
            case.body["agentType"] = model.agent_type
            case.body["config"] = model.versions.latest("number").config
        elif operation == "versions_create":
            case.body.pop("config", None)
        elif operation == "aliases_set":
            agent = uuid_or_none(case, "agentId")
            versions = AgentVersion.objects.filter(agent_id=agent) if agent else None
            numbers = versions.values_list("number", flat=True) if versions is not None else []
            case.body["version"] = max(numbers, default=1)

    def walked(self) -> dict[str, int]:
        """What the scenario did with agents it made itself, counted by WALK's steps."""
        names = {self.tool.name, self.rag.name, self.task.name, self.victim.name}
        made = Agent.objects.exclude(name__in=names)
        return {
            "created": made.count(),
            "versioned": AgentVersion.objects.filter(agent__in=made, number__gt=1).count(),
            "aliased": AliasChange.objects.filter(agent__in=made).count(),
            "answered": Run.objects.filter(agent__in=made, status="completed").count(),
            "deleted": made.filter(deleted_at__isnull=False).count(),
        }

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
    print(f"\nschemathesis: {len(EXAMPLES)} operations, {EXAMPLES.total()} cases")
    for phase, count in PHASES.most_common():
        print(f"  {count:5d} cases in the {phase} phase")
    for label, count in EXAMPLES.most_common():
        print(f"  {count:5d} {label}")
    print(f"failures: {FAILURES.total()}")
    for kind, count in FAILURES.most_common():
        print(f"  {count:5d} {kind}")
    if COLLECT:
        for kind, message in SAMPLES.items():
            print(f"\n--- {kind}\n{message[:1500]}")
        # The tests passed to count everything; the run did not.
        assert not FAILURES, f"{FAILURES.total()} failures, listed above"


def checked(case: Case, call: Callable[[], Any]) -> Any:
    """`call()` (a call_and_validate), its failures counted by kind; raised unless COLLECT."""
    EXAMPLES[case.operation.label] += 1
    PHASES[case.meta.phase.name.value if case.meta else "explicit"] += 1
    try:
        return call()
    except FailureGroup as group:
        for failure in group.exceptions:
            count(case, failure, str(group))
        if not COLLECT:
            raise
    except Failure as failure:
        count(case, failure, str(failure))
        if not COLLECT:
            raise
    return None


def negative(case: Case, where: ParameterLocation) -> bool:
    """Whether the case breaks `where` on purpose (a negative case)."""
    component = case.meta.components.get(where) if case.meta else None
    return component is not None and component.mode == GenerationMode.NEGATIVE


def uuid_or_none(case: Case, name: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str((case.path_parameters or {}).get(name)))
    except ValueError:
        return None


def credentials(case: Case, token: str) -> dict[str, str]:
    """The test's token, unless the case breaks its headers on purpose: a negative case
    without its Authorization header expects the 401 it gets."""
    if negative(case, ParameterLocation.HEADER):
        return {}
    return {"Authorization": f"Bearer {token}"}


def count(case: Case, failure: Failure, message: str) -> None:
    kind = f"{failure.code} {failure.title} | {case.operation.label}"
    FAILURES[kind] += 1
    SAMPLES.setdefault(kind, message)


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
            # Each its own bytes: the same bytes uploaded again are the first document.
            data=f"{title}: the warranty covers parts and labour for two years.".encode(),
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
    checked(case, lambda: case.call_and_validate(headers=credentials(case, world.token)))


# The same world and checks for scenarios: a path parameter a link filled keeps the value
# an earlier answer gave it, any other names the world's rows.
@pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume asynchronous iterators")
def test_stateful_scenarios_conform_to_the_document(world: World) -> None:

    walked: Counter[str] = Counter()

    class Scenario(AGENT_OPERATIONS.as_state_machine()):  # type: ignore[misc]
        # Each scenario starts from the world as the fixture made it: what one wrote would
        # change what the next one's answers hold, and hypothesis replays a scenario
        # expecting the same draws (FlakyStrategyDefinition otherwise).
        def setup(self) -> None:
            self.savepoint = transaction.savepoint()

        def teardown(self) -> None:
            walked.update(world.walked())
            transaction.savepoint_rollback(self.savepoint)

        def step(self, input: StepInput) -> StepOutput:
            case = input.case
            linked = {
                name for where, name in input.applied_parameters if where == ParameterLocation.PATH
            }
            if case.path_parameters:
                mine = world.path_parameters(case)
                case.path_parameters = {
                    name: value if name in linked else mine[name]
                    for name, value in case.path_parameters.items()
                }
            if case.headers and "X-Environment" in case.headers:
                case.headers["X-Environment"] = "default"
            world.fill_body(case, linked=bool(linked))
            return super().step(input)

        def get_call_kwargs(self, case: Case) -> dict[str, Any]:
            return {"headers": credentials(case, world.token)}

        def validate_response(self, response: Any, case: Case, *_: Any, **kwargs: Any) -> None:
            # The headers the call carried, as call_and_validate passes them: the auth checks
            # then know the token was the test's own, not one schemathesis generated.
            checked(
                case,
                lambda: case.validate_response(
                    response,
                    headers=credentials(case, world.token),
                    transport_kwargs=kwargs,
                    recorder=getattr(self, "recorder", None),
                ),
            )

    Scenario.run(
        settings=hypothesis.settings(
            max_examples=SCENARIOS,
            stateful_step_count=SCENARIO_STEPS,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(hypothesis.HealthCheck),
        )
    )

    # Scenarios made agents of their own and went on from them along the links (which of
    # WALK's steps they reach depends on the draws: the walk itself is the test below).
    print(f"\nstateful walk: {dict(walked)}")
    assert walked["created"], walked
    assert sum(walked[step] for step in WALK[1:]), walked


def follow(
    output: StepOutput, link: str, body: dict[str, Any] | None = None, **chosen: str
) -> StepOutput:
    """Calls what the document's link `link` on the answer `output` names, with the
    parameters its expressions take from that answer (and those the link leaves to the
    client, `chosen`), validated as every case is."""
    source = output.case.operation
    status = str(output.response.status_code)
    assert status in LINKS[source.definition.raw["operationId"]], output.response.text
    definition = source.definition.raw["responses"][status]["links"][link]
    followed = OpenApiLink(link, status, definition, source)
    transition = followed.extract(output)
    parameters = dict(chosen)
    for name, extracted in transition.parameters.get("path_parameters", {}).items():
        assert isinstance(extracted.value, Ok), f"{link}: {name} is not in the answer"
        parameters[name] = str(extracted.value.ok())
    case = followed.target.Case(
        path_parameters=parameters,
        body=body if body is not None else NOT_SET,
        headers=dict(output.case.headers or {}),
    )
    response = checked(case, case.call_and_validate)
    return StepOutput(response=response, case=case)


@pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume asynchronous iterators")
def test_the_documented_walk_creates_versions_aliases_invokes_and_deletes(world: World) -> None:
    """create → version → alias → invoke by alias → delete, each call named by a link of
    the one before it in the served document, each answer checked against the document."""
    config = world.tool.versions.latest("number").config
    create = schema["/v1/agents"]["POST"].Case(
        body={"name": "walked", "agentType": "tool", "config": config},
        headers={"Authorization": f"Bearer {world.token}"},
    )
    created = StepOutput(response=checked(create, create.call_and_validate), case=create)
    versioned = follow(created, "AddVersion", {"notes": "the walk's"})
    number = versioned.response.json()["version"]["number"]
    aliased = follow(versioned, "SetAlias", {"version": number}, name=ALIAS)
    answered = follow(aliased, "InvokeByAlias", ANSWERABLE["agents_invoke"])
    deleted = follow(answered, "DeleteAgent")

    steps = [created, versioned, aliased, answered, deleted]
    assert [step.response.status_code for step in steps] == [201, 201, 200, 200, 200]
    agent = Agent.objects.get(name="walked")
    assert agent.deleted_at is not None
    run = Run.objects.get(agent=agent)
    assert (run.status, run.version.number) == ("completed", 2)
    assert AliasChange.objects.filter(agent=agent, name=ALIAS, to_version=run.version).exists()
