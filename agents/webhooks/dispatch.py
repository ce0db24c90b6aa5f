"""Who sends the deliveries: a thread in every server and worker process, started with the
process's liveness thread (agentbuilder.liveness: a server's ASGI start-up, a worker's
pool process), so deliveries go out wherever the platform runs, the embedded mode
included, without a broker, and a restart picks up what was left. It runs a pass
(agents.webhooks.delivery), then waits WEBHOOK_POLL_SECONDS or until this process wakes it
(a "send again"); passes in several processes share the work by row locks.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Collection
from typing import Any

from django.conf import settings
from django.db import connections

from agentbuilder import liveness
from agents.webhooks.delivery import deliveries_send_due

logger = logging.getLogger(__name__)

_thread: threading.Thread | None = None
_lock = threading.Lock()
_wakeup = threading.Event()


def register() -> None:
    # The liveness thread runs exactly where deliveries should be sent, from start-up: its
    # sweep starts ours (no lease of its own to renew).
    liveness.register("webhooks", renew=_nothing, sweep=ensure_started)


def _nothing(keys: Collection[Any]) -> None:
    return None


def ensure_started() -> None:
    global _thread
    # Not where nothing renews or sweeps (the test runner, whose `liveness.tick()` runs the
    # sweeps once): a thread started there would outlive its test and take the deliveries
    # of the servers and workers the later tests start.
    if not settings.WEBHOOKS_ENABLED or not settings.LIVENESS_THREAD:
        return
    if _thread is not None and _thread.is_alive():
        return
    with _lock:
        if _thread is not None and _thread.is_alive():
            return
        _thread = threading.Thread(target=_loop, name="webhooks", daemon=True)
        _thread.start()


def wake() -> None:
    """Look for deliveries due now rather than at the next poll."""
    _wakeup.set()


def _loop() -> None:
    while True:
        _wakeup.clear()  # a wake-up from here on brings another pass
        attempted = 0
        try:
            attempted = deliveries_send_due()
        except Exception:
            logger.exception("webhooks: a delivery pass failed")
        finally:
            for connection in connections.all(initialized_only=True):
                try:
                    connection.close()  # back to the pool between passes
                except Exception:
                    logger.exception("webhooks: closing a connection failed")
        if attempted:
            continue  # more may be due
        _wakeup.wait(float(settings.WEBHOOK_POLL_SECONDS))


def _forget_after_fork() -> None:
    global _thread, _lock, _wakeup
    _thread = None
    _lock = threading.Lock()
    _wakeup = threading.Event()


os.register_at_fork(after_in_child=_forget_after_fork)
