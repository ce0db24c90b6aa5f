from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guardrails.detectors.registry import detector_for
from guardrails.engines.base import Detector, Stage, Verdict


class LocalEngine:
    """A local detector behind the async engine interface; it runs inline (no thread):
    the detectors take well under a millisecond on a streamed window."""

    def __init__(self, detector: Detector) -> None:
        self.detector = detector

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, fail_open: bool) -> LocalEngine:
        """The detector `config` names; it runs in process, so it never fails open."""
        return cls(detector_for(str(config.get("detector", "")), config))

    async def acheck(self, text: str, stage: Stage) -> Verdict:
        return self.detector.check(text, stage)
