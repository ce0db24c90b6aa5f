"""Path parameters, parsed one way: a malformed id is a 400 naming the parameter."""

from __future__ import annotations

import re
import uuid

from agentbuilder.errors import Invalid

# The form the document declares (`format: uuid`, RFC 9562's 8-4-4-4-12 hex digits), not
# every spelling uuid.UUID reads (braces, `urn:uuid:`, no hyphens): what the document
# refuses, the server refuses.
CANONICAL_UUID = re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def path_uuid(value: str, name: str, what: str) -> uuid.UUID:
    """`value`, the path parameter `name`, as a uuid. Raises Invalid: "must be `what` (a
    uuid)"."""
    if not CANONICAL_UUID.fullmatch(value):
        raise Invalid.at(("path", name), f"must be {what} (a uuid)")
    return uuid.UUID(value)
