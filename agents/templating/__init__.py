"""Task prompt templates: sandboxed Jinja2 with bounded rendering (size, loops, repetition,
numbers, time), and the checks that refuse an over-limit template when it is saved."""

from agents.templating.bounded import DROPPED_FILTERS
from agents.templating.budget import TemplateLimitError, TemplateLimits, template_limits
from agents.templating.environment import compiled, render

__all__ = [
    "DROPPED_FILTERS",
    "TemplateLimitError",
    "TemplateLimits",
    "compiled",
    "render",
    "template_limits",
]
