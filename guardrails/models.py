from __future__ import annotations

from django.db import models

DEFAULT_BLOCKED_INPUT = "Sorry, I can't help with that request."
DEFAULT_BLOCKED_OUTPUT = "Sorry, I can't share that answer."


class Engine(models.TextChoices):
    LOCAL = "local", "Local detector"
    BEDROCK = "bedrock", "Bedrock guardrail (ApplyGuardrail)"


class Guardrail(models.Model):
    """A guardrail users pick by name; global when `environment` is empty."""

    name = models.CharField(max_length=100)
    description = models.CharField(max_length=300)
    # A string reference, not an import: guardrails never imports the agents app.
    environment = models.ForeignKey(
        "agents.Environment",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="guardrails",
        help_text="Empty: available in every environment.",
    )
    engine = models.CharField(max_length=20, choices=Engine.choices, default=Engine.LOCAL)
    engine_config = models.JSONField(
        default=dict,
        blank=True,
        help_text='local: {"detector": "profanity"|"insults"|"hate"|"prompt_attack", '
        '"sensitivity": "low"|"medium"|"high", "stages": ["input", "output"]}; '
        'bedrock: {"guardrailId": "...", "version": "1", "stages": [...]}',
    )
    blocked_input_message = models.CharField(max_length=500, default=DEFAULT_BLOCKED_INPUT)
    blocked_output_message = models.CharField(max_length=500, default=DEFAULT_BLOCKED_OUTPUT)
    fail_open = models.BooleanField(
        default=False,
        help_text="When the engine cannot answer (Bedrock down): let the text through "
        "instead of blocking it.",
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["name"],
                condition=models.Q(environment__isnull=True),
                name="guardrail_name_unique_global",
            ),
            models.UniqueConstraint(
                fields=["name", "environment"], name="guardrail_name_unique_per_environment"
            ),
        ]

    def __str__(self) -> str:
        return self.name
