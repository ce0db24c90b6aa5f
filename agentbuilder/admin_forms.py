"""The admin's form plumbing that every app's admin shares: forms that write through a
service, the model fields they leave to it, a JSON object field's value.

In the project package, not in agents: retrieval's admin writes through its services the
same way and never imports agents (`.importlinter`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from django import forms
from django.db import models, transaction
from django.http import HttpRequest

from agentbuilder.errors import DomainError, ErrorItem, Invalid
from agentbuilder.users import User, request_user


def model_fields(model: type[models.Model]) -> list[str]:
    return [field.name for field in model._meta.concrete_fields]


class ServiceForm(forms.ModelForm):
    """A form that writes through a service while it validates.

    The services check and write in one step, so calling them here is what turns their
    domain errors into form errors. The savepoint undoes a half-done change (a rename
    before a refused config), and the admin's transaction still wraps the whole request.
    The model's own validation is skipped (every model field is excluded): it would only
    repeat the service's rules with vaguer messages.
    """

    user: User  # set for each request by the admin (form_for_user)
    # Where an error located on the wire ("body", "displayName", …) shows in the form; an
    # error located elsewhere shows above it.
    located: ClassVar[Mapping[str, str]] = {}

    def apply(self, data: dict[str, Any]) -> models.Model:
        raise NotImplementedError

    def clean(self) -> dict[str, Any]:
        super().clean()
        if self.errors:
            return self.cleaned_data
        try:
            with transaction.atomic():
                self.instance = self.apply(self.cleaned_data)
        except Invalid as exc:
            for item in exc.errors:
                self._add_located_error(item)
        except DomainError as exc:
            self.add_error(None, exc.detail)
        return self.cleaned_data

    def _add_located_error(self, item: ErrorItem) -> None:
        loc = item.loc[1:] if item.loc[:1] == ("body",) else item.loc
        field = self.located.get(str(loc[0])) if loc else None
        message = f"{'.'.join(map(str, loc))}: {item.msg}" if loc else item.msg
        self.add_error(field if field in self.fields else None, message)


def form_for_user(form: type[forms.ModelForm], request: HttpRequest) -> type[forms.ModelForm]:
    # ModelAdmin.get_form builds a fresh class on every request, so this is per request.
    form.user = request_user(request)  # type: ignore[attr-defined]
    return form


def json_object_or_empty(value: Any, what: str = "Metadata") -> dict[str, Any]:
    """A JSON field's value that must be an object, an empty field read as `{}`."""
    if value in (None, ""):
        return {}
    if not isinstance(value, dict):
        raise forms.ValidationError(f"{what} must be a JSON object.")
    return value
