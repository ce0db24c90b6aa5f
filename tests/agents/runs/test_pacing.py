"""Keep-alive pacing: beats while the source is silent, its items in order, and a source
that is closed (not left waiting) when the stream is."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing

import pytest

from agents.runs.pacing import batched, paced


class Source:
    """Yields each item once it is released; records whether it was cancelled."""

    def __init__(self) -> None:
        self.released: asyncio.Queue[str | None] = asyncio.Queue()
        self.cancelled = 0

    async def items(self) -> AsyncIterator[str]:
        try:
            while (item := await self.released.get()) is not None:
                yield item
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


def test_beats_while_silent_then_the_items_in_order() -> None:
    source = Source()
    seen: list[str | None] = []

    async def read() -> None:
        async with aclosing(paced(source.items(), 0.001)) as beats:
            async for item in beats:
                seen.append(item)
                if item is None and seen.count(None) == 1:
                    for released in ("a", "b", None):  # one beat seen: let the source speak
                        source.released.put_nowait(released)

    asyncio.run(read())
    assert seen[0] is None
    assert [item for item in seen if item is not None] == ["a", "b"]
    assert source.cancelled == 0


def test_closing_early_cancels_the_waiting_source() -> None:
    source = Source()

    async def read_one() -> str | None:
        async with aclosing(paced(source.items(), 0.001)) as beats:
            return await anext(beats)  # the source waits: a beat

    assert asyncio.run(read_one()) is None
    assert source.cancelled == 1


def test_batches_hold_what_came_together_in_order() -> None:
    async def source() -> AsyncIterator[str]:
        for item in ("a", "b", "c"):  # together, as a model's deltas from one read
            yield item
        await asyncio.sleep(0)  # the next read
        yield "d"

    async def read() -> list[list[str] | None]:
        async with aclosing(batched(source())) as batches:
            return [batch async for batch in batches]

    assert asyncio.run(read()) == [["a", "b", "c"], ["d"]]


def test_batches_beat_while_silent_and_raise_the_sources_error_after_its_items() -> None:
    source = Source()
    seen: list[list[str] | None] = []

    async def failing() -> AsyncIterator[str]:
        async for item in source.items():
            yield item
        raise LookupError("the source broke")

    async def read() -> None:
        async with aclosing(batched(failing(), 0.001)) as batches:
            async for batch in batches:
                seen.append(batch)
                if batch is None and seen.count(None) == 1:
                    for released in ("a", None):
                        source.released.put_nowait(released)

    with pytest.raises(LookupError):
        asyncio.run(read())
    assert seen[0] is None
    assert [batch for batch in seen if batch is not None] == [["a"]]


def test_a_source_runs_at_most_so_far_ahead_of_its_reader() -> None:
    made = 0

    async def source() -> AsyncIterator[int]:
        nonlocal made
        for number in range(10):
            made += 1
            yield number

    async def read() -> list[int]:
        async with aclosing(batched(source(), most=3)) as batches:
            first = await anext(batches)
            assert first is not None
            return first

    assert asyncio.run(read()) == [0, 1, 2]
    assert made == 3  # closed while it waited for room: nothing more was made


def test_closing_early_cancels_the_source_where_it_waits() -> None:
    source = Source()

    async def read_one() -> list[str] | None:
        async with aclosing(batched(source.items(), 0.001)) as batches:
            return await anext(batches)

    assert asyncio.run(read_one()) is None
    assert source.cancelled == 1
