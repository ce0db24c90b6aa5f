"""The project package: settings, URLs, ASGI, and what the apps share (agentbuilder.plugins,
agentbuilder.aws …).

`celery_app` is built on first use, not on import: a plug-in that imports a shared helper
from here (a guardrail detector, say) must not pull in Celery and, through its Django fixup,
Django. Every Django process still builds it at start-up, as Celery's Django guide asks:
retrieval's AppConfig.ready imports it (retrieval.ingestion); `celery -A agentbuilder`
finds it in agentbuilder.celery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["celery_app"]

if TYPE_CHECKING:
    from agentbuilder.celery import app as celery_app
else:
    # Hidden from mypy, which would otherwise type every unknown name here as Any.
    def __getattr__(name: str) -> Any:
        if name == "celery_app":
            from agentbuilder.celery import app

            return app
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
