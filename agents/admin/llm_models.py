"""The admin of the model catalog."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from agents.models import AgentType, LLMModel


class LLMModelForm(forms.ModelForm):
    agent_types = forms.MultipleChoiceField(
        choices=AgentType.choices, widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = LLMModel
        fields = (
            "id",
            "name",
            "provider",
            "agent_types",
            "capabilities",
            "enabled",
            # What experiments' costs are counted with (docs/api.md#experiments).
            "input_usd_per_mtok",
            "output_usd_per_mtok",
        )
        labels = {
            "input_usd_per_mtok": "Input price (USD per million tokens)",
            "output_usd_per_mtok": "Output price (USD per million tokens)",
        }
        help_texts = {"input_usd_per_mtok": "Empty: unknown, and runs' costs with it."}


@admin.register(LLMModel)
class LLMModelAdmin(admin.ModelAdmin):
    form = LLMModelForm
    list_display = ("id", "name", "provider", "agent_types", "capabilities", "enabled")
    list_filter = ("provider", "enabled")
    search_fields = ("id", "name")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # A changed primary key would save a second row and leave the first behind.
        return ("id",) if obj else ()
