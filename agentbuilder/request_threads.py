"""A fixed set of threads for the sync work of every request, however many are in flight.

Django's ASGI handler opens a `ThreadSensitiveContext` per request, and asgiref gives each
such context a thread of its own on its first thread-sensitive `sync_to_async` call (the
`request_started` receivers, the middleware hooks, `in_db`, `response.close`). The thread
lives until the request ends, after its last byte, so 500 open streams held 500 threads
that sat idle while the model spoke (bench/README.md, "Where the threads come from").

This ASGI middleware enters a context of its own first, with one of REQUEST_THREADS
single-thread executors (asgiref runs a context's thread-sensitive calls on the executor
it is given, and Django's inner context then defers to it). A request keeps one thread for
all its sync calls, as Django expects (its connection and transaction state are per
thread), and requests share threads the way a WSGI server's workers do. Sync work is short
on the async routes: the streams wait on the event loop, not in these threads.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext

Scope = MutableMapping[str, Any]
App = Callable[[Any, Any, Any], Awaitable[None]]


class RequestThreads:
    """ASGI middleware: each HTTP request's thread-sensitive calls run on one of `size`
    threads, taken in turn."""

    def __init__(self, app: App, size: int) -> None:
        if size < 1:
            raise ValueError("REQUEST_THREADS must be at least 1.")
        self.app = app
        # One worker each: asgiref requires it (a context's calls must run one at a time,
        # on one thread), and it is what keeps a request on a single thread.
        self.executors = [
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"request-{n}")
            for n in range(size)
        ]
        self._turn = itertools.cycle(self.executors)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        async with ThreadSensitiveContext(executor=next(self._turn)):
            await self.app(scope, receive, send)
