"""offset/limit pagination and the `pagination` block every list answer carries."""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import Model, QuerySet
from pydantic import Field, model_validator

from agentbuilder.wire import CamelModel, OutputModel

T = TypeVar("T", bound=Model)

MAX_LIMIT = 100
# Above this an OFFSET scan is a denial of service, not a page; Postgres also caps at int64.
MAX_OFFSET = 1_000_000


class PageQuery(CamelModel):
    """Query parameters of a list route; parameters a route does not know are ignored."""

    model_config = CamelModel.model_config | {"extra": "ignore"}

    @model_validator(mode="before")
    @classmethod
    def _empty_is_absent(cls, params: Any) -> Any:
        # `?agentType=&name=` (docs/api.md#pagination) means "no filter", not "filter by ''".
        if isinstance(params, dict):
            return {k: v for k, v in params.items() if v != ""}
        return params

    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    limit: int = Field(50, ge=1, le=MAX_LIMIT)


class Pagination(OutputModel):
    total_items: int
    offset: int
    limit: int
    has_more: bool


def paginate(queryset: QuerySet[T], page: PageQuery) -> tuple[list[T], Pagination]:
    total = queryset.count()
    items = list(queryset[page.offset : page.offset + page.limit])
    return items, Pagination(
        total_items=total,
        offset=page.offset,
        limit=page.limit,
        has_more=page.offset + len(items) < total,
    )


def page_of(items: list[Any], page: PageQuery) -> tuple[list[Any], Pagination]:
    """The same block over a list already in memory (small catalogs)."""
    window = items[page.offset : page.offset + page.limit]
    return window, Pagination(
        total_items=len(items),
        offset=page.offset,
        limit=page.limit,
        has_more=page.offset + len(window) < len(items),
    )
