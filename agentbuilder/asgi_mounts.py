"""ASGI endpoints the apps serve beside Django's handler (agentbuilder.asgi routes to them).

An app mounts its own at start-up (its AppConfig.ready), by the dotted name of a module
that defines `PATH` and `endpoint`; agentbuilder.asgi imports those modules once Django is
set up, as it did when it named them itself. The project package so imports no app, and a
process that never serves (a worker, a management command) never imports an endpoint.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_modules: list[str] = []


def mount(module: str) -> None:
    """Serve `module.endpoint` (an ASGI application) at `module.PATH`, with or without a
    trailing slash."""
    if module not in _modules:
        _modules.append(module)


def endpoints() -> dict[str, Any]:
    """Each mounted path (no trailing slash) with its endpoint, the modules imported now."""
    found = {}
    for name in _modules:
        module = import_module(name)
        found[module.PATH.rstrip("/")] = module.endpoint
    return found
