from __future__ import annotations

from guardrails.engines.base import Detector, Stage, Verdict


class LocalEngine:
    """A local detector behind the async engine interface; it runs inline (no thread):
    the detectors take well under a millisecond on a streamed window."""

    def __init__(self, detector: Detector) -> None:
        self.detector = detector

    async def acheck(self, text: str, stage: Stage) -> Verdict:
        return self.detector.check(text, stage)
