"""`SubscribeToTask` / `tasks/resubscribe`: a live task's remaining updates, whatever
process runs it, read from its run's stored events (agents.runs.event_log).

The stream opens with the task as it stands (the specification's first event: a Task),
its answer so far as the artifact; then the updates `message/stream` would have sent from
there on, in the same shape, to the task's end (`canceled` and `interrupted` runs, which
store no terminal event, end with their status) or to its wait for approvals
(`input-required`, final as on `message/stream`; a subscription to a waiting task is its
opening task alone).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing

from a2a.types import a2a_pb2 as pb

from agents.models import Run, RunEvent, RunStatus
from agents.protocols.a2a.encoder import (
    ARTIFACT_ID,
    Canceled,
    TaskEncoder,
    Update,
    run_task,
    text_part,
)
from agents.runs.event_codec import event_from_json
from agents.runs.event_log import run_events_follow
from agents.runs.pacing import paced
from agents.runtime.events import ResponseCompleted, ResponseCreated, ResponseFailed
from agents.runtime.failures import FailureCode


class Following:
    """The updates of the live task `run` after the events stored when it was subscribed
    to (replayed into the encoder for the opening task, not sent). Made in a database hop
    (`following_start`); iterate `updates()`, `tasks` encodes them."""

    def __init__(self, run: Run) -> None:
        snapshot = run_task(run)
        user = snapshot.history[0] if snapshot.history else pb.Message(role=pb.ROLE_USER)
        self.run_id: uuid.UUID = run.pk
        self.tasks = TaskEncoder(str(run.pk), run.thread_id, user)
        stored = RunEvent.objects.filter(run_id=run.pk).order_by("index")
        self.seen = 0
        for data in stored.values_list("event", flat=True):
            self.tasks.updates(event_from_json(data))
            self.seen += 1
        self._snapshot = snapshot
        self.waiting = run.status == RunStatus.AWAITING_APPROVAL

    def opening(self) -> pb.StreamResponse:
        """The task as it stands after the replayed events, its artifact all the text so
        far: the delta the encoder holds back goes out here, so no update sends it again
        (the subscriber had it twice)."""
        task = pb.Task()
        task.CopyFrom(self._snapshot)
        self.tasks.release_held()
        text = self.tasks.sent
        if text:
            task.artifacts.append(
                pb.Artifact(artifact_id=ARTIFACT_ID, name="answer", parts=[text_part(text)])
            )
        return pb.StreamResponse(task=task)

    async def updates(self, keepalive: float) -> AsyncGenerator[Update | None, None]:
        """The run's events from the first unseen one (None each `keepalive` seconds of
        silence), then how it ended if no event said it."""
        if self.waiting:
            return  # the opening task said it waits: nothing comes until a decision
        follower = run_events_follow(self.run_id, after=self.seen)
        ended = False
        async with aclosing(paced(follower, keepalive)) as beats:
            async for item in beats:
                if item is None:
                    yield None
                    continue
                _, event = item
                if isinstance(event, ResponseCreated):
                    continue  # the opening task said it
                ended = isinstance(event, ResponseCompleted | ResponseFailed)
                yield event
                if isinstance(event, ResponseCompleted) and event.approval_requests:
                    # input-required is final on a stream, as message/stream ends it: the
                    # run waits for a decision, which a message on the task makes.
                    return
        if ended:
            return
        if follower.status == RunStatus.CANCELED:
            yield Canceled()
        else:  # failed without its event: interrupted (the sweep), or it could not be read
            error = follower.error or {}
            code = FailureCode(error.get("code", FailureCode.INTERRUPTED))
            yield ResponseFailed(code, error.get("message", ""))


def following_start(run: Run) -> Following:
    return Following(run)
