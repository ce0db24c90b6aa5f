"""How deep a run sits in a chain of agents calling agents.

A client's own call is depth 0. A run at depth d that calls an agent gives the callee depth
d + 1: in this process (a task agent as a tool), or over the network, where our own MCP
calls send it as the `Agentbuilder-Call-Depth` header and every protocol's endpoint reads
it back. A call past the limit (MAX_AGENT_DEPTH) is refused, so an agent registered as an
MCP server on its own /v1/mcp makes limit + 1 runs, not runs without end.

The header only counts what cooperates (a client may leave it out); it stops the loops the
platform makes itself, which are the ones that run unattended.
"""

from __future__ import annotations

from dataclasses import dataclass

HEADER = "Agentbuilder-Call-Depth"
DEFAULT_LIMIT = 5
# A depth past this is no count a chain of real calls reaches: refused as malformed.
MAX_HEADER_DIGITS = 4


@dataclass(frozen=True)
class CallDepth:
    depth: int = 0
    limit: int = DEFAULT_LIMIT

    def nested(self) -> CallDepth:
        """The depth of an agent this run calls."""
        return CallDepth(self.depth + 1, self.limit)

    @property
    def exceeded(self) -> bool:
        return self.depth > self.limit

    def refusal(self) -> str:
        """Why a call this deep is refused."""
        return (
            f"agents calling agents may nest at most {self.limit} deep (MAX_AGENT_DEPTH); "
            f"this call would run at depth {self.depth}"
        )


def parse_header(value: str) -> int:
    """The depth a header value gives. Raises ValueError for anything but a whole number
    of at most MAX_HEADER_DIGITS digits."""
    text = value.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > MAX_HEADER_DIGITS:
        raise ValueError(f"{HEADER} must be a whole number from 0 to {10**MAX_HEADER_DIGITS - 1}")
    return int(text)
