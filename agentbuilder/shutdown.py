"""A graceful shutdown (docs/api.md#shutdown): on SIGTERM a process stops taking work, lets
what it runs go on for up to SHUTDOWN_GRACE_SECONDS, then has the apps end the rest.

The server (uvicorn) stops accepting connections on SIGTERM and waits for the responses in
flight; a Celery worker's warm shutdown waits for its running tasks. Neither knows what a
run is, and each would wait for a stream that never ends (or, past uvicorn's
`--timeout-graceful-shutdown`, cancel it as if its client had left: `canceled`, which a
shutdown is not). Here the process marks itself stopping at the signal, and when the grace
is over calls what the apps registered (`on_grace_over`): the agents app ends its live runs
`failed` / `interrupted`, each stream with a last line that says so, and the server then
exits as its last responses end. Until then the apps may ask `stopping()` (the runner takes
no more queued runs).

The project package imports no app (.importlinter): the apps register here, as with
agentbuilder.liveness.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

_callbacks: list[Callable[[], object]] = []
_stopping = threading.Event()
_lock = threading.Lock()
_timer: threading.Timer | None = None


def on_grace_over(callback: Callable[[], object]) -> None:
    """Call `callback` (in a thread of its own) once a shutdown's grace is over."""
    _callbacks.append(callback)


def stopping() -> bool:
    """Whether this process is shutting down: take no new work."""
    return _stopping.is_set()


def begin() -> None:
    """The process is shutting down: from now, `stopping()`; after SHUTDOWN_GRACE_SECONDS,
    the callbacks. Once; from any thread, a signal handler included."""
    global _timer
    with _lock:
        if _stopping.is_set():
            return
        _stopping.set()
        grace = float(settings.SHUTDOWN_GRACE_SECONDS)
        logger.info("shutting down: live runs have %s s to finish", grace)
        _timer = threading.Timer(grace, _grace_over)
        _timer.daemon = True
        _timer.start()


def _grace_over() -> None:
    for callback in _callbacks:
        try:
            callback()
        except Exception:
            logger.exception("shutdown: %r failed", callback)


def watch_signals() -> None:
    """Begin the shutdown on SIGTERM or SIGINT, then hand the signal to the handler the
    server installed (uvicorn's, which stops accepting and waits for its responses). From
    the main thread, once the server's handlers are in place (the ASGI lifespan's start-up);
    elsewhere (a server run in a thread) nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        server_handler = signal.getsignal(sig)
        if getattr(server_handler, "_begins_shutdown", False):
            continue  # already watched (a second lifespan in the same process)
        signal.signal(sig, _chained(server_handler))


def _chained(server_handler: Any) -> Callable[[int, FrameType | None], None]:
    def handle(sig: int, frame: FrameType | None) -> None:
        begin()
        if callable(server_handler):
            server_handler(sig, frame)
        elif server_handler == signal.SIG_DFL:  # no server's handler: the default, now
            signal.signal(sig, signal.SIG_DFL)
            signal.raise_signal(sig)

    handle._begins_shutdown = True  # type: ignore[attr-defined]
    return handle
