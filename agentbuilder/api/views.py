"""The base of every /v1 view: pydantic in, pydantic out, the request's environment."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from inspect import iscoroutinefunction
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from adrf.views import APIView as AsyncAPIView
from django.utils.functional import cached_property
from drf_spectacular.utils import OpenApiParameter
from pydantic import BaseModel
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agentbuilder.access import access
from agentbuilder.api.errors import ErrorBody
from agentbuilder.api.parsers import check_text
from agentbuilder.db import in_db
from agentbuilder.users import User
from agentbuilder.wire import parse

if TYPE_CHECKING:

    class ApiRequest(Request):
        """A request as the API's views see it: DRF authenticated its user before any
        handler runs and IsAuthenticated let it in, so it is the project's model (django-stubs
        says AbstractBaseUser | AnonymousUser). The few routes open to anyone (the token,
        A2A's public cards) see None there and check for it before any use."""

        @property
        def user(self) -> User: ...

        @user.setter
        def user(self, value: Any) -> None: ...

else:
    ApiRequest = Request


M = TypeVar("M", bound=BaseModel)
P = ParamSpec("P")
R = TypeVar("R")

# The header `ApiView.environment` reads, as the views that act in an environment document it.
ENVIRONMENT = OpenApiParameter(
    "X-Environment",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Environment name or id; ignored when the token names one. Default: `default`.",
)


class ApiView(APIView):
    request: ApiRequest
    # What the OpenAPI document says of the view's errors (agentbuilder.api.openapi): the
    # body its exception handler writes, whether its writes may meet a taken name (409),
    # whether it waits on a model or an MCP server (502, 504), whether it runs agents that
    # budgets may refuse or stop (402).
    error_schema: type[BaseModel] = ErrorBody
    conflicts: bool = False
    upstream: bool = False
    spends: bool = False

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
        claims = self.request.auth
        header = self.request.headers.get("X-Environment")
        if header is not None:
            check_text(header, ("header", "X-Environment"))
        # Asked, not imported: the project package imports no app (agentbuilder.access).
        return access().request_environment(
            user=self.request.user,
            claim=getattr(claims, "environment_id", None),
            header=header,
        )


def render(model: BaseModel, status: int = 200) -> Response:
    return Response(model.model_dump(mode="json", by_alias=True), status=status)


class AsyncApiView(AsyncAPIView, ApiView):
    """ApiView for `async def` handlers (adrf).

    A view with `checks_in_first_hop` runs DRF's checks (authentication, permissions,
    throttles) in its handler's first database hop, `self.checked(fn)`, instead of in a
    thread hop of their own before the handler: one hop fewer on every call. Its handler
    must start with that hop; an answer it gives without it is refused as a bug."""

    checks_in_first_hop = False
    _checks_ran = False

    async def async_dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        method = request.method.lower()
        handler = getattr(self, method, None) if method in self.http_method_names else None
        if not (self.checks_in_first_hop and iscoroutinefunction(handler)):
            return await super().async_dispatch(request, *args, **kwargs)
        assert handler is not None
        self.args, self.kwargs = args, kwargs
        # DRF's Request, which ApiRequest describes (its user authenticated by the checks).
        self.request = cast("ApiRequest", self.initialize_request(request, *args, **kwargs))
        self.headers = self.default_response_headers
        try:
            response = await handler(self.request, *args, **kwargs)
            if not self._checks_ran:
                raise RuntimeError(f"{type(self).__name__} answered before its checks ran")
        except Exception as exc:
            response = self.handle_exception(exc)
        self.response = self.finalize_response(self.request, response, *args, **kwargs)
        return self.response

    def checked(self, fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
        """`fn` in a database hop (`in_db`), after DRF's checks in the same hop."""

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            self.initial(self.request, *self.args, **self.kwargs)
            self._checks_ran = True
            return fn(*args, **kwargs)

        return in_db(call)

    def check_throttles(self, request: Request) -> None:
        # adrf hops to the event loop and back to check async throttles even when there
        # are none (all of ours are sync): a thread hop on every request, for nothing.
        if any(iscoroutinefunction(t.allow_request) for t in self.get_throttles()):
            super().check_throttles(request)
        else:
            APIView.check_throttles(self, request)
