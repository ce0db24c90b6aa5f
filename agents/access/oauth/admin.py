"""Registered OAuth clients in the admin: DOT's Application page, where deleting a client
(one, or many with the list's action) revokes it through oauth_client_revoke: its tokens
go with it, and the audit log records who did it."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import oauth2_provider.admin  # noqa: F401 - DOT's pages registered first, so this replaces one
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from oauth2_provider.admin import ApplicationAdmin
from oauth2_provider.models import Application

from agents.access.oauth.services import oauth_client_revoke


class ClientAdmin(ApplicationAdmin):
    list_display = (
        "name",
        "client_id",
        "redirect_hosts",
        "client_type",
        "registration_source",
        "created",
    )
    search_fields = ("name", "client_id")
    ordering = ("-created",)

    @admin.display(description="redirect hosts")
    def redirect_hosts(self, obj: Application) -> str:
        return ", ".join(sorted({urlsplit(u).netloc for u in obj.redirect_uris.split()}))

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        deleted, counts, _, protected = super().get_deleted_objects(objs, request)
        # Its codes and tokens go with it (that is the point), which DOT's own pages refuse
        # to delete one by one: deleting the client needs no permission on them.
        return deleted, counts, set(), protected

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        oauth_client_revoke(user=request.user, application=obj)  # type: ignore[arg-type]

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for application in queryset:
            oauth_client_revoke(user=request.user, application=application)  # type: ignore[arg-type]


admin.site.unregister(Application)
admin.site.register(Application, ClientAdmin)
