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


class _Beat:
    """What the reader is woken with when `interval` passed without an item."""


BEAT = _Beat()


async def batched(
    items: AsyncIterator[T], interval: float | None = None, *, most: int = 256
) -> AsyncGenerator[list[T] | None, None]:
    """`items` in batches: each is every item the source yielded since the reader last
    took (at least one), and with `interval`, None each time that many seconds pass
    without one. The source runs in a task of its own, at most `most` items ahead of the
    reader: the items a model's one network read brings (deltas sent together) reach the
    reader, and so its client's socket, as one batch instead of a write each
    (bench/per_delta.py). Closing this cancels the source where it waits; an error of the
    source's is raised to the reader after the items before it."""
    loop = asyncio.get_running_loop()
    ready: list[T] = []
    failure: list[BaseException] = []
    finished = False
    wake: asyncio.Future[object] | None = None  # the reader waits for an item
    room: asyncio.Future[None] | None = None  # the source waits for the reader

    def _wake(why: object) -> None:
        if wake is not None and not wake.done():
            wake.set_result(why)

    async def pump() -> None:
        nonlocal finished, room
        try:
            async for item in items:
                ready.append(item)
                _wake(None)
                if len(ready) >= most:
                    room = loop.create_future()
                    await room
        except BaseException as exc:  # the reader raises it, cancellations of ours aside
            failure.append(exc)
        finally:
            finished = True
            _wake(None)

    source = asyncio.create_task(pump())
    try:
        while True:
            if not ready and not finished:
                wake = loop.create_future()
                timer = loop.call_later(interval, _wake, BEAT) if interval is not None else None
                try:
                    why = await wake
                finally:
                    wake = None
                    if timer is not None:
                        timer.cancel()
                if why is BEAT and not ready and not finished:
                    yield None
                    continue
            if ready:
                batch = ready.copy()
                ready.clear()
                if room is not None and not room.done():
                    room.set_result(None)
                yield batch
                continue
            if failure:
                raise failure[0]
            return
    finally:
        if not source.done():
            source.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await source
