"""The base of every /v1 view: pydantic in, pydantic out, the request's environment."""

from __future__ import annotations

from functools import cached_property
from typing import Any, TypeVar

from pydantic import BaseModel
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agentbuilder.errors import Invalid
from agentbuilder.wire import parse

M = TypeVar("M", bound=BaseModel)


class ApiView(APIView):
    request: Request

    def body(self, model: type[M]) -> M:
        return parse(model, self.request.data, "body")

    def query(self, model: type[M]) -> M:
        params = self.request.query_params.dict()
        for key, value in params.items():
            if "\x00" in value:  # PostgreSQL refuses NUL in text: say so, do not crash
                raise Invalid.at(("query", key), "must not contain the NUL character")
        return parse(model, params, "query")

    @cached_property
    def environment(self) -> Any:
        # Imported here: the project package stays free of app imports at module load.
        from agents.selectors import environment_resolve

        claims = self.request.auth
        return environment_resolve(
            user=self.request.user,
            claim=getattr(claims, "environment_id", None),
            header=self.request.headers.get("X-Environment"),
        )


def render(model: BaseModel, status: int = 200) -> Response:
    return Response(model.model_dump(mode="json", by_alias=True), status=status)
