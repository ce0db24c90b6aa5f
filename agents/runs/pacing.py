"""Keep-alive: a stream that says so each time its run has been silent for a while."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TypeVar

T = TypeVar("T")


async def _next(items: AsyncIterator[T]) -> T:
    return await anext(items)


async def paced(items: AsyncIterator[T], interval: float) -> AsyncGenerator[T | None, None]:
    """`items`, and None each time `interval` seconds pass without one. The source is
    never cancelled by the wait (the next item is awaited in a task of its own), only when
    this is closed before it ends: the client went away, so the run stops and records so."""
    pending: asyncio.Task[T] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.create_task(_next(items))
            done, _ = await asyncio.wait({pending}, timeout=interval)
            if not done:
                yield None
                continue
            task, pending = pending, None
            try:
                item = task.result()
            except StopAsyncIteration:
                return
            yield item
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending
