"""Run hooks: code that sees every run's events as they pass, whatever protocol carries
them, and may stop a run (docs/architecture.md#run-hooks).

The one place where the coming concerns touch a run: a budget counts the usage of each
model call and stops the run that goes over, an approval policy sees the tool calls, a
tracer exports each step. A hook is a class named by its dotted path in RUN_HOOKS,
made once per process; the recorded path (agents.runs.stream) awaits its `on_event` for
each event before the event is recorded or reaches the client, and its `on_end` once the
run's end is written.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Protocol

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from agents.models import RunStatus
from agents.runs.start import Invocation
from agents.runtime.events import Event
from agents.runtime.failures import FailureCode

logger = logging.getLogger(__name__)


class RunHook(Protocol):
    async def on_event(self, invocation: Invocation, event: Event) -> None:
        """Before `event` is recorded and sent. Raise StopRun to end the run there: the
        event is dropped, and the run ends `failed` with the hook's code."""

    async def on_end(self, invocation: Invocation, status: RunStatus) -> None:
        """The run's end is written with `status`. What this raises is logged, not the
        run's: the run has ended."""


class StopRun(Exception):
    """A hook's verdict: the run ends here, `failed` with `code` and `message`."""

    def __init__(self, code: FailureCode, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@functools.cache
def run_hooks() -> tuple[RunHook, ...]:
    hooks: list[RunHook] = [import_string(path)() for path in settings.RUN_HOOKS]
    return tuple(hooks)


@receiver(setting_changed)
def _forget_hooks(*, setting: str, **kwargs: Any) -> None:
    if setting == "RUN_HOOKS":  # a test's override_settings
        run_hooks.cache_clear()


async def hooks_see(invocation: Invocation, event: Event) -> None:
    for hook in run_hooks():
        await hook.on_event(invocation, event)


async def hooks_end(invocation: Invocation, status: RunStatus) -> None:
    for hook in run_hooks():
        try:
            await hook.on_end(invocation, status)
        except Exception:
            logger.exception("run %s: hook %r broke on its end", invocation.run_id, hook)
