"""`name@version`: how the protocols that name an agent by one string (chat completions'
`model`, A2A's agent path, MCP's tool name) say which of its versions to run."""

from __future__ import annotations

import re

AGENT_REFERENCE = re.compile(r"(?P<name>[^@\s]+)(?:@(?P<version>[^@\s]+))?")


def agent_reference(text: str) -> tuple[str, str] | None:
    """(agent name, version ref) of `calculator`, `calculator@3`, `calculator@latest`,
    `calculator@<alias>` or `calculator@<version uuid>` (`latest` when no version is
    named), or None if `text` is not one. The version ref is checked where it is looked up."""
    match = AGENT_REFERENCE.fullmatch(text.strip())
    if match is None:
        return None
    return match["name"], match["version"] or "latest"
