"""Admin pages of rows that belong to an environment, scoped by the API's grants.

Django's model permissions say which kinds of rows a staff user may touch at all; the
environment's object permissions (the API's one rule, asked through agentbuilder.access)
say which rows: READ to see them (read-only), EDIT to change, add or delete them. Rows
of an environment the user holds nothing on are outside every queryset of the page, so
their change and delete URLs answer as missing, bulk actions never select them, and list
filters and environment selects do not name it.

In the project package, not in agents: guardrails and retrieval scope their admins with it
and never import agents (`.importlinter`).
"""

from __future__ import annotations

from functools import reduce
from typing import Any

from django.contrib import admin
from django.db import models
from django.db.models import QuerySet
from django.forms import ModelChoiceField
from django.http import HttpRequest

from agentbuilder.access import access
from agentbuilder.users import User, request_user


class EnvironmentScopedAdmin(admin.ModelAdmin):
    environment_path = "environment"  # from the model to its Environment
    global_rows = False  # rows of no environment: read by all, changed by superusers

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        rows = super().get_queryset(request)
        readable = access().readable_rows(
            request_user(request), path=self.environment_path, global_rows=self.global_rows
        )
        return rows.filter(readable)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        allowed = super().has_add_permission(request, *args)
        user = request_user(request)
        return allowed and (user.is_superuser or access().writable_environments(user).exists())

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or self._may_write(request, obj))

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or self._may_write(request, obj))

    def _may_write(self, request: HttpRequest, obj: Any) -> bool:
        steps = self.environment_path.split("__")
        environment = reduce(lambda row, step: getattr(row, step, None), steps, obj)
        return access().may_write_row(request_user(request), environment)

    def get_list_filter(self, request: HttpRequest) -> Any:
        # Django's related filter lists every environment; this one only the environments
        # of the rows the user sees.
        return [
            (f, admin.RelatedOnlyFieldListFilter) if f == self.environment_path else f
            for f in super().get_list_filter(request)
        ]

    def formfield_for_foreignkey(
        self, db_field: models.ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> ModelChoiceField | None:
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is not None and db_field.related_model is access().environment_model:
            writable(field, request_user(request))
        return field


def writable(field: ModelChoiceField, user: User) -> None:
    """Narrow an environment select to the environments `user` may write rows in; only a
    superuser may leave it empty (a global row)."""
    if user.is_superuser:
        return
    field.queryset = access().writable_environments(user)
    field.required = True
