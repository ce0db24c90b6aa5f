"""guardian's object-permission pages in the admin, their saves made through
agents.access.grants so that each grant and revocation is in the audit log."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.http import HttpRequest
from guardian.admin import AdminGroupObjectPermissionsForm, AdminUserObjectPermissionsForm

from agentbuilder.users import User, request_user
from agents.access.grants import permission_grant, permission_revoke


def _save(form: Any, actor: User, holder: Any) -> None:
    """guardian's save (the offered ones not selected but held go, those selected and not
    held come), by `actor`, one record a change."""
    perms = set(form.cleaned_data[form.get_obj_perms_field_name()])
    offered = {choice[0] for choice in form.get_obj_perms_field_choices()}
    held = set(form.get_obj_perms_field_initial())
    change = {"user": actor, "holder": holder, "target": form.obj}
    with transaction.atomic():
        for codename in sorted((offered - perms) & held):
            permission_revoke(codename=codename, **change)
        for codename in sorted(perms - held):
            permission_grant(codename=codename, **change)


class AuditedUserPermissionsForm(AdminUserObjectPermissionsForm):
    actor: User

    def save_obj_perms(self) -> None:
        _save(self, self.actor, self.user)


class AuditedGroupPermissionsForm(AdminGroupObjectPermissionsForm):
    actor: User

    def save_obj_perms(self) -> None:
        _save(self, self.actor, self.group)


class AuditedPermissionsAdminMixin:
    """For a GuardedModelAdmin: its user and group permission pages save through the
    audited services, as the request's user."""

    def get_obj_perms_manage_user_form(self, request: HttpRequest) -> type[Any]:
        actor = request_user(request)
        return type("UserPermissionsForm", (AuditedUserPermissionsForm,), {"actor": actor})

    def get_obj_perms_manage_group_form(self, request: HttpRequest) -> type[Any]:
        actor = request_user(request)
        return type("GroupPermissionsForm", (AuditedGroupPermissionsForm,), {"actor": actor})
