"""Path parameters, parsed one way: a malformed id is a 400 naming the parameter."""

from __future__ import annotations

import uuid

from agentbuilder.errors import Invalid


def path_uuid(value: str, name: str, what: str) -> uuid.UUID:
    """`value`, the path parameter `name`, as a uuid. Raises Invalid: "must be `what` (a
    uuid)"."""
    try:
        return uuid.UUID(value)
    except ValueError:
        raise Invalid.at(("path", name), f"must be {what} (a uuid)") from None
