"""Content negotiation for routes whose every answer is JSON."""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import BaseContentNegotiation, DefaultContentNegotiation
from rest_framework.request import Request


class JsonAnswers(BaseContentNegotiation):
    """JSON whatever `Accept` says: a streaming client asks for `text/event-stream`, and
    its 401, 404 or non-streamed answer must still reach it (DRF would answer 406)."""

    def select_parser(self, request: Request, parsers: Any) -> Any:
        return DefaultContentNegotiation().select_parser(request, parsers)

    def select_renderer(self, request: Request, renderers: Any, format_suffix: Any = None) -> Any:
        return renderers[0], renderers[0].media_type
