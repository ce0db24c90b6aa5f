"""Keep-alive pacing: beats while the source is silent, its items in order, and a source
that is closed (not left waiting) when the stream is."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing

from agents.runs.pacing import paced


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
