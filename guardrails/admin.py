from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from agentbuilder.scoped_admin import EnvironmentScopedAdmin
from guardrails.engines.registry import engine_for
from guardrails.models import Guardrail


class GuardrailForm(forms.ModelForm):
    class Meta:
        model = Guardrail
        fields = (
            "name",
            "description",
            "environment",
            "enabled",
            "engine",
            "engine_config",
            "blocked_input_message",
            "blocked_output_message",
            "fail_open",
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        config = data.get("engine_config")
        if not isinstance(config, dict):
            raise forms.ValidationError({"engine_config": "must be a JSON object"})
        # Build the engine once: an unknown detector or a missing guardrailId is caught
        # here, not on the first request that names this guardrail.
        try:
            engine_for(data.get("engine", ""), config, fail_open=bool(data.get("fail_open")))
        except (LookupError, KeyError, ValueError, TypeError) as exc:
            raise forms.ValidationError({"engine_config": f"not a usable engine: {exc}"}) from None
        return data


@admin.register(Guardrail)
class GuardrailAdmin(EnvironmentScopedAdmin):
    global_rows = True
    form = GuardrailForm
    list_display = ("name", "description", "scope", "engine", "enabled")
    list_filter = ("enabled", "engine", "environment")
    list_select_related = ("environment",)
    search_fields = ("name", "description")

    @admin.display(description="environment", ordering="environment__name")
    def scope(self, guardrail: Guardrail) -> str:
        return guardrail.environment.name if guardrail.environment else "global"
