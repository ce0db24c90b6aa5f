"""On cue in a run's text (the fake model says it): `STALL` blocks the event loop consuming
the run (a deadlock: nothing on that loop moves again); `LOSE` makes the run's final write
fail as the request's exited thread-sensitive context made it fail (issue 24)."""

from __future__ import annotations

import threading
from typing import Any

from django.apps import AppConfig

STALL, LOSE = "STALL", "LOSE"


class StallConfig(AppConfig):
    name = "tests.agents.runs.stall"
    label = "stall_runs"

    def ready(self) -> None:
        from agents.runs.record import RunRecorder
        from agents.runtime.events import TextDelta

        observe, save = RunRecorder.observe, RunRecorder.save

        def observe_on_cue(recorder: Any, event: Any) -> None:
            observe(recorder, event)
            if isinstance(event, TextDelta) and STALL in event.text:
                threading.Event().wait()  # on the loop's own thread: it never moves again
            if isinstance(event, TextDelta) and LOSE in event.text:
                recorder.lost = True

        def save_or_lose(recorder: Any, *, canceled: bool = False) -> None:
            if getattr(recorder, "lost", False):
                raise RuntimeError("ThreadSensitiveContext has exited")  # as in issue 24
            save(recorder, canceled=canceled)

        RunRecorder.observe = observe_on_cue  # type: ignore[method-assign]
        RunRecorder.save = save_or_lose  # type: ignore[method-assign]
