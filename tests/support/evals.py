"""Helpers of the evaluations' tests: an experiment followed to its end."""

from __future__ import annotations

import time
from typing import Any

from rest_framework.test import APIClient

# Only so that a broken experiment fails its test rather than hanging the suite: what the
# tests check is the experiment's end, never how long it took.
GIVE_UP_SECONDS = 300


def experiment_ended(api: APIClient, experiment_id: str) -> dict[str, Any]:
    """GET /v1/experiments/{id} until it has ended; its last body."""
    give_up = time.monotonic() + GIVE_UP_SECONDS
    while True:
        body: dict[str, Any] = api.get(f"/v1/experiments/{experiment_id}").json()
        if body["ended"]:
            return body
        assert time.monotonic() < give_up, f"experiment {experiment_id} never ended: {body}"
        time.sleep(0.05)
