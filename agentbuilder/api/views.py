"""The base of every /v1 view: pydantic in, pydantic out, the request's environment."""

from __future__ import annotations

from inspect import iscoroutinefunction
from typing import Any, TypeVar

from adrf.views import APIView as AsyncAPIView
from django.utils.functional import cached_property
from pydantic import BaseModel
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agentbuilder.api.errors import ErrorBody
from agentbuilder.api.parsers import check_text
from agentbuilder.wire import parse

M = TypeVar("M", bound=BaseModel)


class ApiView(APIView):
    request: Request
    # What the OpenAPI document says of the view's errors (agentbuilder.api.openapi): the
    # body its exception handler writes, whether its writes may meet a taken name (409),
    # whether it waits on a model or an MCP server (502, 504).
    error_schema: type[BaseModel] = ErrorBody
    conflicts: bool = False
    upstream: bool = False

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        # After authentication (a stranger learns nothing), before any lookup by the value:
        # PostgreSQL cannot compare with text it cannot hold (`/v1/threads/a%00b`).
        for name, value in kwargs.items():
            if isinstance(value, str):
                check_text(value, ("path", name))

    def body(self, model: type[M]) -> M:
        return parse(model, self.request.data, "body")

    def query(self, model: type[M]) -> M:
        params = self.request.query_params.dict()
        for key, value in params.items():
            check_text(value, ("query", key))
        return parse(model, params, "query")

    # Django's cached_property: functools' holds one lock for the whole process while it
    # computes (Python 3.11), so concurrent requests queued on each other's queries.
    @cached_property
    def environment(self) -> Any:
        # Imported here: the project package stays free of app imports at module load.
        from agents.selectors import environment_resolve

        claims = self.request.auth
        header = self.request.headers.get("X-Environment")
        if header is not None:
            check_text(header, ("header", "X-Environment"))
        return environment_resolve(
            user=self.request.user,
            claim=getattr(claims, "environment_id", None),
            header=header,
        )


def render(model: BaseModel, status: int = 200) -> Response:
    return Response(model.model_dump(mode="json", by_alias=True), status=status)


class AsyncApiView(AsyncAPIView, ApiView):
    """ApiView for `async def` handlers (adrf)."""

    def check_throttles(self, request: Request) -> None:
        # adrf hops to the event loop and back to check async throttles even when there
        # are none (all of ours are sync): a thread hop on every request, for nothing.
        if any(iscoroutinefunction(t.allow_request) for t in self.get_throttles()):
            super().check_throttles(request)
        else:
            APIView.check_throttles(self, request)
