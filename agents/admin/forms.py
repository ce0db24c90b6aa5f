"""The agents' admin forms: a service form that places the agents' wire fields, config
fields (the shared plumbing is agentbuilder.admin_forms)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.forms.fields import InvalidJSONInput

from agentbuilder.admin_forms import ServiceForm as BaseServiceForm

# The agents' fields as the wire names them, and as their admin forms do.
FORM_FIELDS = {
    "name": "name",
    "displayName": "display_name",
    "description": "description",
    "agentType": "agent_type",
    "config": "config",
}
PRE_STYLE = "font-size:12px; line-height:1.4; white-space:pre-wrap"


def config_text(config: Any) -> str:
    # In the order the author wrote (AgentVersion.config_shown; the column is `json`, which
    # keeps it): a round trip through the editor must not reorder a config.
    return json.dumps(config, indent=2, ensure_ascii=False)


class ConfigField(forms.JSONField):
    """A JSON textarea that shows configs indented and says where broken JSON breaks."""

    widget = forms.Textarea(attrs={"rows": 24, "cols": 100, "style": "font-family:monospace"})

    def prepare_value(self, value: Any) -> Any:
        return value if isinstance(value, InvalidJSONInput) else config_text(value)

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value.strip():
            try:
                json.loads(value)
            except json.JSONDecodeError as exc:
                msg = f"config: invalid JSON, {exc.msg} at line {exc.lineno} column {exc.colno}"
                raise forms.ValidationError(msg, code="invalid") from None
        return super().to_python(value)


class ServiceForm(BaseServiceForm):
    """agentbuilder.admin_forms.ServiceForm with the agents' fields: where a service's error
    located on the wire shows in the agents' forms."""

    located = FORM_FIELDS
