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
        fields = ("id", "name", "provider", "agent_types", "capabilities", "enabled")


@admin.register(LLMModel)
class LLMModelAdmin(admin.ModelAdmin):
    form = LLMModelForm
    list_display = ("id", "name", "provider", "agent_types", "capabilities", "enabled")
    list_filter = ("provider", "enabled")
    search_fields = ("id", "name")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # A changed primary key would save a second row and leave the first behind.
        return ("id",) if obj else ()
