"""Server-sent events, as the process and chat completions protocols stream them."""

from __future__ import annotations

import json
from typing import Any


def sse(data: dict[str, Any]) -> bytes:
    """One server-sent event carrying one object."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return b"data: " + text.encode() + b"\n\n"
