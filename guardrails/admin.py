from __future__ import annotations

from django.contrib import admin

from guardrails.models import Guardrail


@admin.register(Guardrail)
class GuardrailAdmin(admin.ModelAdmin):
    list_display = ("name", "description", "scope", "enabled")
    list_filter = ("enabled", "environment")
    list_select_related = ("environment",)
    search_fields = ("name", "description")
    fields = ("name", "description", "environment", "enabled")

    @admin.display(description="environment", ordering="environment__name")
    def scope(self, guardrail: Guardrail) -> str:
        return guardrail.environment.name if guardrail.environment else "global"
