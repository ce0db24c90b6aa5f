"""Beat inside the server process (agentbuilder/beat.py): a server without a broker, as
`make run` serves it, fires the schedules by itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agents.access.permissions import Action, grant
from agents.models import Agent, Run
from tests.factories import UserFactory
from tests.live import server_process
from tests.support.schedules import overdue_schedule, runs_of, wait_for

pytestmark = [
    # The server process sees committed rows only.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("reseed_after_module"),
]


def test_a_server_without_a_broker_fires_a_missed_tick_once(
    make_agent: Callable[..., Agent], env: Any, tmp_path: Path
) -> None:
    owner = UserFactory(username="member")
    for action in (Action.READ, Action.EDIT, Action.INVOKE):
        grant(owner, action, env)
    schedule = overdue_schedule(make_agent(), owner, missed_hours=3)
    log = tmp_path / "server.log"

    with server_process(log, BEAT_EMBEDDED="true", LOG_LEVEL="DEBUG") as server:
        [run] = runs_of(schedule, 1, alive=(server.process,), logs=(log,))
        # Two more passes of beat's loop: each would have sent the tick again if it were due.
        passes = log.read_text().count("beat: Waking up")
        wait_for(
            lambda: log.read_text().count("beat: Waking up") >= passes + 2,
            (server.process,),
            (log,),
        )

    assert (run.status, run.caller, run.protocol) == ("completed", owner, "schedule"), run.error
    assert Run.objects.filter(schedule=schedule).count() == 1
