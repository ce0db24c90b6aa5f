from __future__ import annotations

from django.db import models


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
