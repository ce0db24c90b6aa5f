"""Database work from async code without holding a connection across awaits."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import connection

P = ParamSpec("P")
R = TypeVar("R")


def in_db(fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """Run `fn` in the request's sync thread, then hand its connection back (to the pool)
    so a long stream does not keep one open while it waits on a model."""

    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        finally:
            # Inside an atomic block (a test's transaction) closing would lose the work.
            if not connection.in_atomic_block:
                connection.close()

    return sync_to_async(call, thread_sensitive=True)
