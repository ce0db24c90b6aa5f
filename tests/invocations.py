"""Starting a run from keyword arguments, for tests that open one without a view."""

from __future__ import annotations

from typing import Any

from agents.runs.request import RunRequest
from agents.runs.start import Invocation
from agents.runs.start import invocation_start as start


def invocation_start(**fields: Any) -> Invocation:
    mcp_servers = tuple(fields.pop("mcp_servers", ()))
    return start(RunRequest(**fields, mcp_servers=mcp_servers))
