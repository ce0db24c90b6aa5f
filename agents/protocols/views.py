"""The base of every protocol's view (docs/architecture.md#request-path): a view parses
its protocol's request into a RunRequest, opens the run (agents.runs.start), and answers
the run's events through its encoder, streamed or whole, along the one run path
(agents.runs.stream) under the run's headers. Nothing else of a run lives in a view.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from django.http import StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse
from rest_framework.response import Response

from agentbuilder.api.views import AsyncApiView
from agentbuilder.wire import CamelModel
from agents.api.views import agent_uuid
from agents.models import Environment
from agents.runs.request import CHAT_TYPES, RunRequest, call_depth_of
from agents.runs.start import Invocation
from agents.runs.stream import Encode, encoded

STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class ProtocolView(AsyncApiView):
    """A view that runs agents: it waits on a model or an MCP server (502, 504 in its
    OpenAPI errors), and builds its run requests for the caller it authenticated."""

    upstream = True
    spends = True  # a spent budget refuses or stops its runs (docs/api.md#budgets)
    protocol = ""  # the run's `protocol`, as runs are listed and filtered by it
    route = ""  # how a refusal names the route (`Agent type task not supported in ...`)

    def run_request(
        self,
        agent_id: str | uuid.UUID | None,
        version_ref: str,
        *,
        agent_types: tuple[str, ...] = CHAT_TYPES,
        environment: Environment | None = None,
        **fields: Any,
    ) -> RunRequest:
        """The caller's request to run `version_ref` of the agent of `agent_id` (a path
        parameter, parsed here, or an id already found; None: the agent `agent_name`
        names), in the request's environment."""
        if isinstance(agent_id, str):
            agent_id = agent_uuid(agent_id)
        return RunRequest(
            user=self.request.user,
            environment=self.environment if environment is None else environment,
            agent_id=agent_id,
            version_ref=version_ref,
            protocol=self.protocol,
            route=self.route,
            agent_types=agent_types,
            call_depth=call_depth_of(self.request.headers),
            **fields,
        )


def run_headers(invocation: Invocation, *, stream: bool = False) -> dict[str, str]:
    headers = {"X-Run-Id": str(invocation.run_id)}
    return {**STREAM_HEADERS, **headers} if stream else headers


def streamed(
    invocation: Invocation,
    encode: Encode,
    content_type: str,
    *,
    keepalive: tuple[float, bytes] | None = None,
) -> StreamingHttpResponse:
    """The run's events as the encoder's frames (agents.runs.stream.encoded)."""
    response = StreamingHttpResponse(
        encoded(invocation, encode, keepalive=keepalive), content_type=content_type
    )
    for name, value in run_headers(invocation, stream=True).items():
        response[name] = value
    return response


class Queued(CamelModel):
    """A background run, accepted: `Location` is the run (GET /v1/runs/{id})."""

    run_id: uuid.UUID
    status: Literal["queued"] = "queued"


QUEUED_DOC = {
    202: OpenApiResponse(
        Queued,
        description="With `background: true`: the run is queued; `Location` is the run.",
    )
}


def queued(run_id: uuid.UUID) -> Response:
    """The 202 of a background run (docs/api.md#background-runs)."""
    location = reverse("run-detail", kwargs={"runId": str(run_id)})
    body = Queued(run_id=run_id).model_dump(mode="json", by_alias=True)
    return Response(body, status=202, headers={"Location": location, "X-Run-Id": str(run_id)})
