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
            # What each model call is priced with (docs/api.md#cost).
            "input_usd_per_mtok",
            "output_usd_per_mtok",
            "cached_input_usd_per_mtok",
            "prices_as_of",
        )
        labels = {
            "input_usd_per_mtok": "Input price (USD per million tokens)",
            "output_usd_per_mtok": "Output price (USD per million tokens)",
            "cached_input_usd_per_mtok": "Cached input price (USD per million tokens)",
            "prices_as_of": "Prices taken on",
        }
        help_texts = {
            "input_usd_per_mtok": "Empty: unknown, and the cost of runs that use the model too.",
            "cached_input_usd_per_mtok": "Input tokens read from the provider's prompt cache. "
            "Empty: billed as other input.",
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        priced = [data.get(f) is not None for f in ("input_usd_per_mtok", "output_usd_per_mtok")]
        if any(priced) and not all(priced):
            raise forms.ValidationError("Give both the input and the output price, or neither.")
        return data


@admin.register(LLMModel)
class LLMModelAdmin(admin.ModelAdmin):
    form = LLMModelForm
    list_display = (
        "id",
        "name",
        "provider",
        "input_usd_per_mtok",
        "output_usd_per_mtok",
        "prices_as_of",
        "enabled",
    )
    list_filter = ("provider", "enabled")
    search_fields = ("id", "name")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # A changed primary key would save a second row and leave the first behind.
        return ("id",) if obj else ()
