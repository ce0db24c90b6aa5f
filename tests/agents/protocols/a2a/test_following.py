"""A subscription's opening task and the updates after it make the answer once: the text
the encoder holds back (the last delta, until it knows whether it is the last chunk) goes
out with the opening, so no update may send it again. The JS SDK's subscriber assembled
'1, 2, 2, 3, …' on a busy machine, where it subscribed while a delta was held."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import async_to_sync

from agents.llm.base import Usage
from agents.models import Agent, Run, RunEvent
from agents.protocols.a2a.following import following_start
from agents.runs.event_codec import event_json
from agents.runtime.events import Event, ResponseCompleted, ResponseCreated, TextDelta

DELTAS = ["1, ", "2, ", "3, ", "4, "]


def store(run: Run, events: list[Event], first: int) -> None:
    RunEvent.objects.bulk_create(
        RunEvent(run=run, index=first + n, event=event_json(e)) for n, e in enumerate(events)
    )


def assembled(text: str, updates: list[pb.StreamResponse]) -> str:
    """What a client makes of the artifact: an update appends to it or replaces it."""
    for update in updates:
        if update.HasField("artifact_update"):
            chunk = "".join(p.text for p in update.artifact_update.artifact.parts)
            text = text + chunk if update.artifact_update.append else chunk
    return text


@pytest.mark.django_db
@pytest.mark.parametrize("stored", [0, 1, 2, 3], ids=lambda n: f"{n} deltas stored")
def test_the_opening_and_the_updates_make_the_answer_once(
    make_agent: Any, owner: Any, stored: int
) -> None:
    agent: Agent = make_agent("Counter")
    run = Run.objects.create(
        agent=agent,
        version=agent.versions.get(),
        caller=owner,
        protocol="a2a",
        thread_id="ctx",
        messages=[{"role": "user", "content": "Count."}],
    )
    created = ResponseCreated(response_id="resp_1", model="m", created_at=0)
    store(run, [created, *map(TextDelta, DELTAS[:stored])], 0)
    following = following_start(Run.objects.get(pk=run.pk))
    opening = following.opening().task
    text = "".join(p.text for a in opening.artifacts for p in a.parts)

    answer = "".join(DELTAS)
    rest: list[Event] = [*map(TextDelta, DELTAS[stored:]), ResponseCompleted(Usage(), answer)]
    store(run, rest, 1 + stored)
    Run.objects.filter(pk=run.pk).update(status="completed", output=answer)

    async def follow() -> list[pb.StreamResponse]:
        out: list[pb.StreamResponse] = []
        async for event in following.updates(keepalive=60):
            assert event is not None
            out.extend(following.tasks.updates(event))
        return out

    updates = async_to_sync(follow)()
    assert text == "".join(DELTAS[:stored])  # all the text so far
    assert assembled(text, updates) == answer
    assert updates[-2].artifact_update.last_chunk
