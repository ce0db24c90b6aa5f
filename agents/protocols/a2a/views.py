"""Every agent as an A2A agent (docs/api.md#a2a, agents.protocols.a2a).

- `GET /v1/a2a`: the cards of the environment's agents the caller may INVOKE (what it can
  call, as the OpenAI base's models and the MCP server's tools).
- `GET /v1/a2a/{name}/.well-known/agent-card.json`: one agent's card, for a caller who may
  READ or INVOKE it (404 otherwise, as on the invoke routes). `{name}` may be `name@3`,
  `name@prod`: the card and the endpoint then run that version.
- Both card routes answer in the dialect of the `A2A-Version` header (1.x: 1.0's card, none
  or 0.x: 0.3's, agents.protocols.a2a.card). With `A2A_PUBLIC_CARDS` they need no token and
  show every agent of the environment (`X-Environment`, else `default`); the JSON-RPC
  endpoint always needs one.
- `POST /v1/a2a/{name}`: the JSON-RPC endpoint. `message/send` and `message/stream` (or
  1.0's `SendMessage`, `SendStreamingMessage`) start a run with protocol `a2a` (INVOKE: a
  403 without it); the task id is the run id, the `contextId` the run's thread (the
  caller's own: another caller's same id is another thread). A send that asks to return at
  once (1.0's `returnImmediately`, 0.3's `blocking: false`) answers the working task and
  the run goes on without the request, for the client to poll. `tasks/get` (`GetTask`) reads
  the caller's runs of the agent (every caller's with AUDIT); `tasks/cancel` (`CancelTask`)
  cancels the caller's own run while it runs, in whichever process runs it (through the
  database, agents.runs.live), and answers the task once it has ended (or as it stands
  after CANCEL_WAIT_SECONDS). `tasks/resubscribe` (`SubscribeToTask`) streams a live task's
  remaining updates from its stored events, from any process (agents.protocols.a2a.following);
  a finished task is -32004. A send that returns at once hands its run to the process
  (agents.runs.detached), which runs it to its end.
  `ListTasks` (1.0 only: 0.3 has no `tasks/list`) pages the tasks `tasks/get` would read
  that were started over A2A, newest first. `GetExtendedAgentCard`
  (`agent/getAuthenticatedExtendedCard`) is the card with the caller's own view. The
  push-notification config methods keep a task's configs (agents.protocols.a2a.push): its
  caller sets and deletes them while it runs, whoever sees the task gets and lists them; a
  send may carry one. Their deliveries are webhooks' (-32003 where webhooks are off).
  The endpoint is a 404, before its body is read, for a caller who may neither READ nor
  INVOKE the agent (AUDIT alone reads runs through /v1/runs).

Authentication, throttling, 401/403/404/429 are the REST API's (HTTP status, the API's
error body). Anything wrong inside the call is a JSON-RPC error in an HTTP 200 body.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any, TypeVar
from urllib.parse import quote

from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db.models import Q
from django.http import JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from agentbuilder.api.middleware import max_body_bytes
from agentbuilder.api.negotiation import JsonAnswers
from agentbuilder.api.parsers import RequestTooLarge, check_text
from agentbuilder.api.views import ENVIRONMENT, AsyncApiView
from agentbuilder.db import in_db
from agentbuilder.errors import (
    Conflict,
    DomainError,
    Invalid,
    NotFound,
    PermissionDenied,
    RateLimited,
)
from agents.access.environments import environment_public
from agents.access.permissions import Action, AgentHeld
from agents.budgets.gate import BudgetExceeded
from agents.configs import config_parse
from agents.models import RUN_ENDED, Agent, AgentVersion, Run, RunStatus
from agents.protocols.a2a.card import agent_card, card_json, extended_card
from agents.protocols.a2a.dialects import PUSH_METHODS, Dialect, Method, card_dialect
from agents.protocols.a2a.encoder import (
    KEEPALIVE,
    STATES,
    SseEncoder,
    TaskEncoder,
    response,
    result_json,
    run_task,
    send_result,
    tasks_page,
)
from agents.protocols.a2a.errors import Path, error_body, from_invalid, invalid_params
from agents.protocols.a2a.following import Following, following_start
from agents.protocols.a2a.push import (
    config_json,
    configs_json,
    push_check,
    push_config_delete,
    push_config_get,
    push_config_list,
    push_config_set,
)
from agents.protocols.a2a.request import (
    PARTS,
    Call,
    Cursor,
    RpcRefusal,
    approval_decisions,
    call_parse,
    chat_messages,
    part_data,
    task_inputs,
)
from agents.protocols.names import agent_reference
from agents.protocols.sse import sse
from agents.protocols.views import ProtocolView, run_headers, streamed
from agents.runs.background import run_queue, run_stop
from agents.runs.request import RunRequest
from agents.runs.start import CallTooDeep, Invocation, TemplateOverLimit, invocation_start
from agents.runs.stream import answered
from agents.selectors.agents import (
    agent_get,
    agent_id_by_name,
    agent_list_invocable,
    agent_list_public,
    agent_seen_by_name,
)
from agents.selectors.aliases import alias_list
from agents.selectors.runs import runs_visible
from agents.selectors.versions import (
    latest_versions,
    version_get,
    version_list,
    version_ref_parse,
)
from agents.services.approvals import StillWaiting, approvals_decide

T = TypeVar("T")  # what a run start answers: the invocation, or a queued run's id

PROTOCOL = "a2a"
ROUTE = "/v1/a2a"
KEEPALIVE_SECONDS = 15.0
# How long tasks/cancel waits for the run to end (a cancel reaches it within 2 s, even in
# another process) before it answers the task as it stands.
CANCEL_WAIT_SECONDS = 10.0
EXTENDED_VERSIONS = 20  # the newest versions the extended card names
VERSION_HEADER = "A2A-Version"
AGENT_NAME = OpenApiParameter(
    "name", str, OpenApiParameter.PATH, description="Agent name, or `name@version`."
)
CARD_VERSION = OpenApiParameter(
    VERSION_HEADER,
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="`1.0`: the cards as A2A 1.0 writes them (protobuf JSON); none or `0.3`: as "
    "0.3 does, with 1.0's `supportedInterfaces` beside its `url`.",
)


def _agent_seen(view: AsyncApiView, name: str) -> AgentHeld:
    """The agent `name` names and the caller's grants on it, if it may READ or INVOKE it
    (NotFound otherwise): one statement, which a message/send's run start reuses."""
    user, environment = view.request.user, view.environment
    return agent_seen_by_name(user=user, environment=environment, name=name)


def _endpoint_url(request: Request, reference: str) -> str:
    return request.build_absolute_uri(f"{ROUTE}/{quote(reference, safe='@')}")


def _card(request: Request, agent: Agent, version: AgentVersion, reference: str) -> pb.AgentCard:
    """The card of `version`, its endpoint named by `reference` (`name`, `name@prod`)."""
    return agent_card(
        name=agent.name,
        description=agent.description,
        agent_type=agent.agent_type,
        config=config_parse(agent.agent_type, version.config),
        version=version.number,
        url=_endpoint_url(request, reference),
        docs_url=request.build_absolute_uri("/v1/docs"),
        base_url=request.build_absolute_uri("/").rstrip("/"),
    )


def _card_answer(request: Request, body: dict[str, Any]) -> JsonResponse:
    # One URL, two shapes: a cache must key on the header that chose it.
    return JsonResponse(body, headers={"Vary": VERSION_HEADER})


class _PublicCards(BasePermission):
    """A token, unless the operator made the cards public (A2A_PUBLIC_CARDS)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(settings.A2A_PUBLIC_CARDS or (request.user and request.user.is_authenticated))


class _CardView(AsyncApiView):
    content_negotiation_class = JsonAnswers
    permission_classes = [_PublicCards]

    @property
    def public(self) -> bool:
        return bool(settings.A2A_PUBLIC_CARDS)

    @property
    def card_environment(self) -> Any:
        if self.request.user is None:  # no token: A2A_PUBLIC_CARDS let it in
            header = self.request.headers.get("X-Environment")
            if header is not None:  # as ApiView.environment: text PostgreSQL can compare
                check_text(header, ("header", "X-Environment"))
            return environment_public(reference=header)
        return self.environment

    @property
    def dialect(self) -> Dialect:
        return card_dialect(self.request.headers.get(VERSION_HEADER))


class A2AAgentListView(_CardView):
    @extend_schema(
        operation_id="a2a_agents_list",
        parameters=[ENVIRONMENT, CARD_VERSION],
        responses={
            200: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description='`{"agents": [agent card, ...]}`: the agents the caller may invoke.',
            )
        },
        tags=["a2a"],
        summary="The A2A agent cards of the environment's agents the caller may invoke",
        description="Each agent as an A2A agent (a2a-protocol.org): its card names its "
        "JSON-RPC endpoint, `POST /v1/a2a/{name}` (`message/send`, `message/stream`, "
        "`tasks/get`, `tasks/cancel`, or 1.0's `SendMessage` ...), its skills and the "
        "Bearer token it takes. With A2A_PUBLIC_CARDS: every agent of the environment, "
        "no token needed.",
    )
    async def get(self, request: Request) -> HttpResponseBase:
        return _card_answer(request, await in_db(self._list)())

    def _list(self) -> dict[str, Any]:
        environment = self.card_environment
        agents = list(
            agent_list_public(environment=environment)
            if self.public
            else agent_list_invocable(user=self.request.user, environment=environment)
        )
        versions = latest_versions(agent_ids=[a.pk for a in agents])
        cards = [
            card_json(_card(self.request, agent, versions[agent.pk], agent.name), self.dialect)
            for agent in agents
            if agent.pk in versions
        ]
        return {"agents": cards}


class A2AAgentCardView(_CardView):
    @extend_schema(
        operation_id="a2a_agent_card",
        parameters=[AGENT_NAME, ENVIRONMENT, CARD_VERSION],
        responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="The agent card.")},
        tags=["a2a"],
        summary="One agent's A2A agent card",
        description="For a caller who may READ or INVOKE the agent (anyone, with "
        "A2A_PUBLIC_CARDS); `name@3` or `name@prod` is the card of that version, its endpoint "
        "running it.",
    )
    async def get(self, request: Request, name: str) -> HttpResponseBase:
        return _card_answer(request, await in_db(self._get)(name))

    def _get(self, reference: str) -> dict[str, Any]:
        name, version_ref = _reference(reference)
        agent = self._public_agent(name) if self.public else _agent_seen(self, name).agent
        version = version_get(agent=agent, ref=version_ref)
        return card_json(_card(self.request, agent, version, reference), self.dialect)

    def _public_agent(self, name: str) -> Agent:
        environment = self.card_environment
        agent_id = agent_id_by_name(environment=environment, name=name)
        if agent_id is None:
            raise NotFound(f"Agent '{name}' in environment '{environment.name}' not found.")
        return Agent.objects.get(pk=agent_id)


def _reference(reference: str) -> tuple[str, str]:
    found = agent_reference(reference)
    if found is not None:
        try:
            version_ref_parse(found[1])
        except Invalid:
            pass
        else:
            return found
    return reference, "latest"  # no agent is named so: a 404 when looked up


@dataclass
class _Started:
    """A call read and checked in the first database hop, to answer after it."""

    call: Call
    invocation: Invocation | None = None
    queued: uuid.UUID | None = None  # a background run's id (a send that returns at once)
    context_id: str = ""
    result: Any = None  # answered at once (a push config method's may be null or a list)
    answered: bool = False
    cancel: Run | None = None
    follow: Following | None = None


class A2AEndpointView(ProtocolView):
    content_negotiation_class = JsonAnswers
    protocol = PROTOCOL
    route = ROUTE
    checks_in_first_hop = True

    @extend_schema(exclude=True)  # JSON-RPC: one path, many methods; the agent card is its doc
    async def post(self, request: Request, name: str) -> HttpResponseBase:
        try:
            started = await self.checked(self._start)(name)
            if started.answered or started.result is not None:
                return _json(response(started.call.request_id, started.result))
            if started.cancel is not None:
                return await self._cancel(started.call, started.cancel)
            if started.follow is not None:
                return _follow(started.call, started.follow)
            return await self._run(started)
        except RpcRefusal as refusal:
            body = error_body(refusal.request_id, refusal.error, refusal.dialect)
            return _json(body)

    # ------------------------------------------------------------ in the first hop

    def _start(self, reference: str) -> _Started:
        name, version_ref = _reference(reference)
        found = _agent_seen(self, name)  # a 404 before anything is read
        agent_id = found.agent.pk
        invocable = found.agent if Action.INVOKE in found.held else None
        raw = _body(self.request)
        call = call_parse(raw, self.request.headers.get("A2A-Version"))
        if call.method is Method.GET:
            task = run_task(self._run_of(call, agent_id, call.task_id), call.history_length)
            return _Started(call, result=result_json(task, call.dialect))
        if call.method is Method.CANCEL:
            return _Started(call, cancel=self._cancelable(call, agent_id))
        if call.method is Method.SUBSCRIBE:
            return _Started(call, follow=self._followable(call, agent_id))
        if call.method is Method.LIST:
            return _Started(call, result=self._list(call, agent_id))
        if call.method is Method.EXTENDED_CARD:
            card = self._extended_card(agent_id, invocable, version_ref, reference)
            return _Started(call, result=card_json(card, call.dialect))
        if call.method in PUSH_METHODS:
            return _Started(call, result=self._push(call, agent_id), answered=True)
        if invocable is None:
            raise PermissionDenied(
                f"You do not have {Action.INVOKE.name} permission on this agent."
            )
        return self._invoke(call, invocable, version_ref, found.held)

    def _run_of(self, call: Call, agent_id: uuid.UUID, task_id: str) -> Run:
        """The agent's run `task_id` if the caller may see it (its own, any with AUDIT)."""
        try:
            run_id = uuid.UUID(task_id)
        except ValueError:
            raise call.refusal(TaskNotFoundError(f"Task '{task_id}' not found")) from None
        run = (
            runs_visible(user=self.request.user, environment=self.environment)
            .filter(pk=run_id, agent_id=agent_id)
            .first()
        )
        if run is None:
            raise call.refusal(TaskNotFoundError(f"Task '{task_id}' not found"))
        return run

    def _list(self, call: Call, agent_id: uuid.UUID) -> dict[str, Any]:
        """ListTasks: a page of the runs `tasks/get` would read that were started over A2A,
        newest first by (started_at, id), in two queries (the count, the page)."""
        listing = call.listing
        assert listing is not None
        runs = runs_visible(user=self.request.user, environment=self.environment)
        runs = runs.filter(agent_id=agent_id, protocol=PROTOCOL)
        if listing.context_id:
            runs = runs.filter(thread_id=listing.context_id)
        if listing.state:
            runs = runs.filter(status__in=[s for s, t in STATES.items() if t == listing.state])
        if listing.status_after is not None:  # the status' timestamp: its end, or its start
            at = listing.status_after
            runs = runs.filter(
                Q(completed_at__gte=at) | Q(completed_at__isnull=True, started_at__gte=at)
            )
        total = runs.count()
        if listing.after is not None:
            after = listing.after
            runs = runs.filter(
                Q(started_at__lt=after.started_at)
                | Q(started_at=after.started_at, pk__lt=after.run_id)
            )
        rows = list(runs.defer("steps").order_by("-started_at", "-id")[: listing.page_size + 1])
        page = rows[: listing.page_size]
        more = len(rows) > listing.page_size
        tasks = [run_task(run, call.history_length) for run in page]
        if not listing.include_artifacts:  # the specification's default: smaller pages
            for task in tasks:
                task.ClearField("artifacts")
        token = Cursor(page[-1].started_at, page[-1].pk).token() if more else ""
        return tasks_page(tasks, token, listing.page_size, total)

    def _extended_card(
        self, agent_id: uuid.UUID, invocable: Agent | None, version_ref: str, reference: str
    ) -> pb.AgentCard:
        """The card of the endpoint's version with what this caller may call on the agent."""
        agent = invocable or agent_get(
            user=self.request.user, environment=self.environment, agent_id=agent_id
        )
        version = version_get(agent=agent, ref=version_ref)
        request = self.request
        versions = list(version_list(agent=agent)[:EXTENDED_VERSIONS])
        view = {
            "canInvoke": invocable is not None,
            "versions": [
                {
                    "version": v.number,
                    "label": v.version_label,
                    "url": _endpoint_url(request, f"{agent.name}@{v.number}"),
                }
                for v in versions
            ],
            "aliases": [
                {
                    "name": alias.name,
                    "version": alias.version.number,
                    "url": _endpoint_url(request, f"{agent.name}@{alias.name}"),
                }
                for alias in alias_list(agent=agent)
            ],
        }
        return extended_card(_card(request, agent, version, reference), view)

    def _cancelable(self, call: Call, agent_id: uuid.UUID) -> Run:
        run = self._run_of(call, agent_id, call.task_id)
        if run.status in RUN_ENDED:
            raise call.refusal(
                TaskNotCancelableError(f"Task '{run.pk}' is {run.status}: it cannot be canceled")
            )
        if run.caller_id != self.request.user.pk:
            raise call.refusal(
                TaskNotCancelableError("Only the caller who started a task may cancel it")
            )
        return run

    def _followable(self, call: Call, agent_id: uuid.UUID) -> Following:
        run = self._run_of(call, agent_id, call.task_id)
        if run.status in RUN_ENDED:
            # The specification's answer for a task in a terminal state: nothing to stream.
            raise call.refusal(
                UnsupportedOperationError(
                    f"Task '{run.pk}' is {run.status}: it has no updates left to stream; "
                    "read it with tasks/get (GetTask)"
                )
            )
        return following_start(run)

    def _push(self, call: Call, agent_id: uuid.UUID) -> Any:
        """A push-notification config method's result (agents.protocols.a2a.push)."""
        if not settings.WEBHOOKS_ENABLED:
            raise call.refusal(
                PushNotificationNotSupportedError(
                    "Push notifications are turned off on this server (WEBHOOKS_ENABLED): "
                    "stream the task, or poll it with tasks/get (GetTask)"
                )
            )
        run = self._run_of(call, agent_id, call.task_id)
        if call.method is Method.PUSH_GET:
            found = push_config_get(run_id=run.pk, config_id=call.push_id)
            if found is None:
                raise call.refusal(self._no_config(call))
            return config_json(found, call.dialect)
        if call.method is Method.PUSH_LIST:
            return configs_json(push_config_list(run_id=run.pk), call.dialect)
        if run.caller_id != self.request.user.pk:
            raise call.refusal(
                UnsupportedOperationError(
                    "Only the caller who started a task may change its push notification configs"
                )
            )
        if call.method is Method.PUSH_DELETE:
            if not push_config_delete(run_id=run.pk, config_id=call.push_id):
                raise call.refusal(self._no_config(call))
            return {} if call.dialect is Dialect.V1 else None
        assert call.push is not None
        if run.status in RUN_ENDED:
            raise call.refusal(
                UnsupportedOperationError(
                    f"Task '{run.pk}' is {run.status}: it has no updates left to push"
                )
            )
        try:
            push_check(call.push, call.push_url_at)
        except A2AError as error:
            raise call.refusal(error) from None
        config = push_config_set(run_id=run.pk, config=call.push, dialect=call.dialect)
        return config_json(config, call.dialect)

    @staticmethod
    def _no_config(call: Call) -> A2AError:
        at: Path = (
            ("params", "id")
            if call.dialect is Dialect.V1
            else (
                "params",
                "pushNotificationConfigId",
            )
        )
        name = call.push_id or "(none)"
        return invalid_params([(at, f"the task has no push notification config '{name}'")])

    def _invoke(self, call: Call, agent: Agent, version_ref: str, held: frozenset[str]) -> _Started:
        message = call.message
        assert message is not None
        if call.push is not None:  # refused before the run opens
            try:
                push_check(call.push, call.push_url_at)
            except A2AError as refused:
                raise call.refusal(refused) from None
        if message.task_id:
            run = self._run_of(call, agent.pk, message.task_id)  # -32001 unless it sees it
            if run.status == RunStatus.AWAITING_APPROVAL:  # the message decides its calls
                return self._decide(call, run)
            raise call.refusal(
                UnsupportedOperationError(
                    "A task ends with its answer and takes no further messages: send a new "
                    "message with its contextId to continue the conversation"
                )
            )
        context_id = message.context_id or str(uuid.uuid4())
        try:
            request = self.run_request(
                agent.pk,
                version_ref,
                agent_types=("tool", "rag", "task"),
                thread_id=context_id,
                held=held,  # read with the agent: the run's start reads them no more
                stream=call.method is Method.STREAM,
            )
        except Invalid as exc:  # its call-depth header: the request as a whole, not a param
            error = InvalidRequestError(f"Invalid request: {exc.errors[0].msg}")
            raise call.refusal(error) from None
        try:
            if call.returns_at_once:  # a background run; the client polls tasks/get
                queued = _open_run(request, message, agent.agent_type, run_queue)
                self._push_with_send(call, queued)
                return _Started(call, queued=queued, context_id=context_id)
            invocation = _open_run(request, message, agent.agent_type, invocation_start)
        except A2AError as error:
            raise call.refusal(error) from None
        self._push_with_send(call, invocation.run_id)
        return _Started(call, invocation=invocation, context_id=context_id)

    def _decide(self, call: Call, run: Run) -> _Started:
        """A message on a task that waits for approvals: its `decisions` data part decides
        them (docs/api.md#tool-approvals); the last one resumes the same task."""
        assert call.message is not None
        try:
            decisions = approval_decisions(call.message)
        except A2AError as error:
            raise call.refusal(error) from None
        try:
            decided = approvals_decide(
                user=self.request.user,
                environment=self.environment,
                run_id=run.pk,
                decisions=decisions,
            )
        except Invalid as exc:  # an id of no request of this task
            where = [
                ((*PARTS, *_decision_path(call.message, item.loc)), item.msg) for item in exc.errors
            ]
            raise call.refusal(invalid_params(where)) from None
        except Conflict as exc:  # decided already, or it waits no more
            raise call.refusal(UnsupportedOperationError(exc.detail)) from None
        if isinstance(decided, StillWaiting):
            task = run_task(Run.objects.get(pk=run.pk), call.history_length)
            return _Started(call, result=send_result(task, call.dialect))
        self._push_with_send(call, decided.run_id)
        return _Started(call, invocation=decided, context_id=run.thread_id)

    @staticmethod
    def _push_with_send(call: Call, run_id: uuid.UUID) -> None:
        # Before the run's stream starts: its end, which makes the deliveries, comes after.
        # (A queued run could, in principle, be taken and ended by a worker first.)
        if call.push is not None:
            push_config_set(run_id=run_id, config=call.push, dialect=call.dialect)

    # ------------------------------------------------------------ after it

    async def _run(self, started: _Started) -> HttpResponseBase:
        call, invocation = started.call, started.invocation
        assert call.message is not None
        if started.queued is not None:  # a worker runs it; the client polls tasks/get
            tasks = TaskEncoder(str(started.queued), started.context_id, call.message)
            body = response(call.request_id, send_result(tasks.submitted(), call.dialect))
            return _json(body, {"X-Run-Id": str(started.queued)})
        assert invocation is not None
        tasks = TaskEncoder(str(invocation.run_id), started.context_id, call.message)
        if call.method is Method.STREAM:
            encoder = SseEncoder(tasks, call.request_id, call.dialect)
            keepalive = (KEEPALIVE_SECONDS, KEEPALIVE)
            return streamed(invocation, encoder.frames, "text/event-stream", keepalive=keepalive)
        await answered(invocation, tasks.updates)
        assert tasks.final is not None
        body = response(call.request_id, send_result(tasks.final, call.dialect))
        return _json(body, run_headers(invocation))

    async def _cancel(self, call: Call, run: Run) -> HttpResponseBase:
        if not await in_db(run_stop)(run_id=run.pk, by=self.request.user):
            raise call.refusal(  # it ended since it was read
                TaskNotCancelableError(f"Task '{run.pk}' has ended: it cannot be canceled")
            )
        deadline = time.monotonic() + CANCEL_WAIT_SECONDS
        while (ended := await in_db(Run.objects.get)(pk=run.pk)).status not in RUN_ENDED:
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        return _json(response(call.request_id, result_json(run_task(ended), call.dialect)))


def _decision_path(message: pb.Message, loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """Where in the message's parts a decision's field is: `approvals_decide` names it in
    its own body (`body.decisions.<i>.approvalRequestId`)."""
    index = next(
        i
        for i, part in enumerate(message.parts)
        if part.WhichOneof("content") == "data" and "decisions" in (part_data(part) or {})
    )
    return (index, "data", *loc[1:])


def _body(request: Request) -> bytes:
    """The raw body, held to the API's limit on JSON bodies (a 413, as on every route)."""
    limit = max_body_bytes(request.path)
    too_large = RequestTooLarge(f"Request body is larger than {limit} bytes.")
    if int(request.META.get("CONTENT_LENGTH") or 0) > limit:
        raise too_large
    try:
        raw: bytes = request.body
    except RequestDataTooBig:
        raise too_large from None
    if len(raw) > limit:
        raise too_large
    return raw


def _open_run(
    request: RunRequest, message: pb.Message, agent_type: str, start: Callable[[RunRequest], T]
) -> T:
    """Start the run of `message` with `start` (now, or queued); raises A2AError for what
    the message got wrong."""
    locate: Callable[[tuple[str | int, ...]], Path]
    if agent_type == "task":
        inputs = task_inputs(message)
        locate = inputs.locate
        request = replace(request, inputs=inputs.inputs)
    else:
        # The message is one text; a refusal of one of its files names that part.
        locate = lambda loc: loc if loc[: len(PARTS)] == PARTS else PARTS  # noqa: E731
        request = replace(request, messages=chat_messages(message))
    try:
        return start(request)
    except Invalid as exc:
        files = [e for e in exc.errors if len(e.loc) > len(PARTS) and e.loc[: len(PARTS)] == PARTS]
        if files and len(files) == len(exc.errors):  # the model reads no such file
            data: dict[str, Any] = {"path": list(files[0].loc)}
            if exc.run_id is not None:
                data["taskId"] = str(exc.run_id)  # the failed run that records the refusal
            raise ContentTypeNotSupportedError(
                f"{files[0].msg}: send it to an agent whose model reads it", data=data
            ) from None
        raise from_invalid(exc, locate) from None
    except TemplateOverLimit as exc:
        raise invalid_params([(locate(("body", "inputs")), exc.message)]) from None
    except CallTooDeep as exc:  # the request as a whole (its call-depth header), not a param
        raise InvalidRequestError(f"Invalid request: {exc.detail}") from None
    except BudgetExceeded as exc:  # no task: a budget is spent (a 402 on the HTTP routes)
        data = {"code": exc.code.value, **exc.context}
        raise InvalidRequestError(f"Budget exceeded: {exc.detail}", data=data) from None
    except (NotFound, PermissionDenied, RateLimited):  # the REST API's 404, 403, 429
        raise
    except DomainError as exc:  # a guardrail of the agent's config is no longer available
        raise InternalError(exc.detail) from None


def _json(body: dict[str, Any], headers: dict[str, str] | None = None) -> JsonResponse:
    return JsonResponse(body, headers=headers, json_dumps_params={"ensure_ascii": False})


def _follow(call: Call, following: Following) -> HttpResponseBase:
    """The live task's updates as `message/stream` sends them, after its task as it stands.
    The client leaving stops the following, not the run."""
    encoder = SseEncoder(following.tasks, call.request_id, call.dialect)

    async def body() -> AsyncIterator[bytes]:
        yield sse(response(call.request_id, result_json(following.opening(), call.dialect)))
        async with aclosing(following.updates(KEEPALIVE_SECONDS)) as updates:
            async for update in updates:
                if update is None:
                    yield KEEPALIVE
                    continue
                for frame in encoder.frames(update):
                    yield frame

    stream = StreamingHttpResponse(body(), content_type="text/event-stream")
    stream["Cache-Control"], stream["X-Accel-Buffering"] = "no-cache", "no"
    stream["X-Run-Id"] = str(following.run_id)
    return stream
