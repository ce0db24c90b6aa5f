"""The project's URLs plus two baselines on the same server, each a plain async Django view
with no authentication and no database:

- `/bench/bare`, which invoke_overhead compares the invoke route with;
- `/bench/relay`, which stream_concurrency compares invoke-stream with: it opens the same
  upstream stream as the platform's OpenAI-compatible provider (`POST
  {OPENAI_BASE_URL}/chat/completions`, `stream: true`) with one shared `httpx.AsyncClient`
  and writes each text delta as an NDJSON line, as the platform's native stream does;
- `/bench/floor`, the bare view plus the least an invoke must do besides: with `?db` the
  platform's own database statements of a call (the token's holder; the agent with the
  caller's grants and the version; the run row's INSERT: in one hop to a request thread;
  the run's end in a second), with `?model` the model call the relay makes, read to its end.
  `/bench/floor-api` does the same behind the API's own DRF view (authentication,
  throttles, negotiation, renderer). What invoke_overhead compares the invoke with, to
  tell the platform's own Python from what any design that keeps its guarantees pays on
  this stack.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
import weakref
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

# The httpx that openai installs (imported under that name by the SDK, too).
import httpx2 as httpx
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.views import AsyncApiView
from agentbuilder.db import in_db
from agentbuilder.urls import handler404, handler500, urlpatterns

__all__ = ["handler404", "handler500", "urlpatterns"]

# A PUT stores the platform's answer to the benchmark's request; each POST then sends the
# same body back (with a fresh id and time, as the platform does), so both move the same bytes.
_answer: dict[str, Any] = {}


def _answered() -> dict[str, Any]:
    """The stored answer with a fresh id and time, as the platform answers."""
    return {**_answer, "id": f"resp_{uuid.uuid4().hex}", "createdAt": int(time.time())}


@csrf_exempt
async def bare(request: HttpRequest) -> HttpResponse:
    if request.method == "PUT":
        _answer.clear()
        _answer.update(json.loads(request.body))
        return HttpResponse(status=204)
    return JsonResponse(_answered())


# What the platform sends for bench/common.py's one-tool agent: its system prompt, the
# caller's messages, the tool's schema, the model without its catalog prefix.
RELAY_SYSTEM = "You are a helpful assistant with access to various tools."
RELAY_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "multiply",
            "description": "Multiplies two numbers",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        },
    }
]
# The OpenAI SDK's own defaults (openai._constants), so both sides pool alike.
RELAY_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
RELAY_TIMEOUT = httpx.Timeout(timeout=600, connect=5.0)

# One client per event loop (one per process under uvicorn): its pooled connections
# belong to the loop that opened them.
_relay_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def _relay_client() -> httpx.AsyncClient:
    loop = asyncio.get_running_loop()
    client = _relay_clients.get(loop)
    if client is None:
        key = os.environ.get("OPENAI_API_KEY", "")
        # The benchmark's fake model on loopback; no default that could reach elsewhere.
        client = httpx.AsyncClient(
            base_url=os.environ["OPENAI_BASE_URL"],
            headers={"Authorization": f"Bearer {key}"},
            limits=RELAY_LIMITS,
            timeout=RELAY_TIMEOUT,
        )
        _relay_clients[loop] = client
    return client


def _line(event: dict[str, Any]) -> bytes:
    return json.dumps(event, separators=(",", ":")).encode() + b"\n"


async def _relayed(messages: list[dict[str, Any]]) -> AsyncIterator[bytes]:
    body = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": RELAY_SYSTEM}, *messages],
        "tools": RELAY_TOOLS,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    # Leaving the block (the stream's end, or the client gone and this generator closed)
    # closes the upstream response.
    async with _relay_client().stream("POST", "/chat/completions", json=body) as upstream:
        if upstream.status_code != 200:
            refusal = (await upstream.aread()).decode(errors="replace")[:300]
            yield _line({"type": "response.failed", "error": f"{upstream.status_code} {refusal}"})
            return
        async for line in upstream.aiter_lines():
            if not line.startswith("data: "):
                continue
            data = line[6:]
            if data == "[DONE]":
                break
            choices = json.loads(data).get("choices") or ()
            for choice in choices[:1]:
                text = (choice.get("delta") or {}).get("content")
                if text:
                    yield _line({"type": "response.output_text.delta", "delta": text})
    yield _line({"type": "response.completed"})


@csrf_exempt
async def relay(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    if request.method != "POST":
        return HttpResponse(status=405)
    messages = json.loads(request.body).get("messages") or []
    response = StreamingHttpResponse(_relayed(messages), content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


# The ids the floor's statements use: a caller and an agent of the benchmark's data (PUT).
_floor: dict[str, Any] = {}


def _floor_start(*, holder: bool = True) -> str:
    """The statements of an invoke's start, with plain cursors (without the token's
    holder's when DRF's authentication has read it); the run row's id."""
    from django.db import connection

    from agents.access.environments import DEFAULT_ENVIRONMENT
    from agents.access.tokens import _holder_sql
    from agents.models import Run
    from agents.runs.lookup import _invoke_sql

    run_id = uuid.uuid4()
    with connection.cursor() as cursor:
        if holder:
            cursor.execute(_holder_sql(), [None, DEFAULT_ENVIRONMENT, _floor["user"]])
            cursor.fetchone()
        cursor.execute(_invoke_sql("latest"), {"agent": _floor["agent"], "user": _floor["user"]})
        row = cursor.fetchone()
        version_id = row[[column.name for column in cursor.description].index("version_id")]
        # The platform's INSERT writes every column of the row; so does this one.
        cursor.execute(
            f"INSERT INTO {Run._meta.db_table} (id, agent_id, version_id, caller_id, protocol,"  # noqa: S608
            " status, response_id, started_at, completed_at, latency_ms, tokens_usage,"
            " thread_id, messages, output, error, steps, lease_until) VALUES (%s, %s, %s, %s,"
            " 'bench-floor', 'in_progress', %s, %s, NULL, NULL, '{}', '', %s::jsonb, NULL,"
            " NULL, '[]', now() + interval '60 seconds')",
            [
                run_id,
                _floor["agent"],
                version_id,
                _floor["user"],
                f"resp_{run_id.hex}",
                datetime.now(UTC),
                '[{"role":"user","content":"floor"}]',
            ],
        )
    return str(run_id)


def _floor_end(run_id: str) -> None:
    from django.db import connection

    from agents.runs.record import _end_sql

    with connection.cursor() as cursor:
        cursor.execute(
            _end_sql(),
            {
                "id": run_id,
                "status": "completed",
                "now": datetime.now(UTC),
                "usage": '{"input_tokens":1,"output_tokens":1,"total_tokens":2}',
                "messages": '[{"role":"assistant","content":"floor"}]',
                "output": None,
                "error": None,
                "steps": "[]",
                # The run's events, kept with its end as a short invoke's are.
                "events": FLOOR_EVENTS,
                "first": 0,
            },
        )


FLOOR_EVENTS = json.dumps(
    [
        {
            "type": "response_created",
            "response_id": "resp_floor",
            "model": "floor",
            "created_at": 0,
        },
        *({"type": "text_delta", "text": text} for text in ("Hello ", "from ", "the ", "floor.")),
        {"type": "response_completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
    ]
)


@csrf_exempt
async def floor(request: HttpRequest) -> HttpResponse:
    if request.method == "PUT":
        _floor.update(json.loads(request.body))
        return HttpResponse(status=204)
    run_id = await in_db(_floor_start)() if "db" in request.GET else None
    if "model" in request.GET:
        async for _ in _relayed([{"role": "user", "content": "floor"}]):
            pass
    if run_id is not None:
        await in_db(_floor_end)(run_id)
    return JsonResponse(_answered())


class FloorApi(AsyncApiView):
    """`/bench/floor` behind the API's own view: DRF's request, the project's bearer-token
    authentication (the token's holder read), throttles, content negotiation and JSON
    renderer, DRF's checks in the first hop as the invoke views run them. What the invoke
    adds beyond this is the runtime, the recorder and trace, the spec, the SDK."""

    checks_in_first_hop = True

    async def post(self, request: Request) -> Response:
        run_id = await self.checked(_floor_start)(holder=False)
        if "model" in request.query_params:
            async for _ in _relayed([{"role": "user", "content": "floor"}]):
                pass
        await in_db(_floor_end)(run_id)
        return Response(
            {**_answer, "id": f"resp_{uuid.uuid4().hex}", "createdAt": int(time.time())}
        )


urlpatterns = [
    path("bench/bare", bare),
    path("bench/relay", relay),
    path("bench/floor", floor),
    path("bench/floor-api", FloorApi.as_view()),
    *urlpatterns,
]
