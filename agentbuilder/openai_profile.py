"""Where the OpenAI-compatible server is, for every client of one (the chat provider, the
embedder): OPENAI_BASE_URL and OPENAI_API_KEY from Django's settings, else the process
environment, so scripts and the SDK's own conventions work without Django configured."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured


def openai_profile() -> tuple[str | None, str | None]:
    """(base_url, api_key); None where neither source sets one (the SDK's defaults)."""
    return _setting("OPENAI_BASE_URL"), _setting("OPENAI_API_KEY")


def _setting(name: str) -> str | None:
    from django.conf import settings

    try:
        value = getattr(settings, name, None)
    except ImproperlyConfigured:  # settings not configured: a script outside Django
        value = None
    return value or os.environ.get(name) or None
