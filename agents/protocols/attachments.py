"""Images and documents in a request's messages, read into the runtime's `Attachment`.

Every protocol carries them its own way (the native API's `source`, OpenAI's `image_url` and
`file` parts, the agent API protocol's `image_url`); all arrive here as base64 bytes with a
media type. The server never fetches a URL: a part that names one is refused, so a request
cannot make the server reach another host. What a model can read is the catalog's business
(`agents.runs.start`); this module only checks that a part is well formed, and says where it is
not.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Literal

from agentbuilder.errors import Invalid
from agents.llm.base import Attachment

Kind = Literal["image", "document"]
Loc = tuple[str | int, ...]

# What Bedrock Converse accepts, which every other provider's list contains.
MEDIA_TYPES: dict[Kind, frozenset[str]] = {
    "image": frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"}),
    "document": frozenset(
        {
            "application/pdf",
            "text/csv",
            "text/plain",
            "text/markdown",
            "text/html",
            "application/msword",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "application/vnd.ms-excel",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        }
    ),
}
# Bedrock's own limits per block (3.75 MB an image, 4.5 MB a document).
MAX_BYTES: dict[Kind, int] = {"image": 3_750_000, "document": 4_500_000}
_DATA_URL = re.compile(r"data:(?P<type>[\w.+-]+/[\w.+-]+)(?:;[\w-]+=[^;,]*)*;base64,(?P<data>.*)")


def from_base64(kind: Kind, media_type: str, data: str, loc: Loc, *, name: str = "") -> Attachment:
    """A part given as base64 text and its media type. Raises Invalid at `loc`."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise Invalid.at(loc, f"the {kind}'s data is not valid base64") from None
    return _attachment(kind, media_type, raw, loc, name)


def from_text(media_type: str, text: str, loc: Loc, *, name: str = "") -> Attachment:
    """A document given as text; its bytes are the text's UTF-8."""
    try:
        raw = text.encode()
    except UnicodeEncodeError:  # a lone surrogate from a JSON escape
        raise Invalid.at(loc, "the document's text is not valid Unicode") from None
    return _attachment("document", media_type, raw, loc, name)


def _attachment(kind: Kind, media_type: str, raw: bytes, loc: Loc, name: str) -> Attachment:
    media_type = media_type.strip().lower()
    if media_type not in MEDIA_TYPES[kind]:
        allowed = ", ".join(sorted(MEDIA_TYPES[kind]))
        raise Invalid.at(loc, f"{kind} media type '{media_type}' is not one of: {allowed}")
    if not raw:
        raise Invalid.at(loc, f"the {kind} is empty")
    if len(raw) > MAX_BYTES[kind]:
        raise Invalid.at(loc, f"the {kind} is {len(raw)} bytes; at most {MAX_BYTES[kind]}")
    return Attachment(kind, media_type, raw, name, loc)


def from_url(kind: Kind, url: str, loc: Loc, *, name: str = "") -> Attachment:
    """A part given as a `data:` URL; any other URL is refused rather than fetched."""
    match = _DATA_URL.fullmatch(url.strip())
    if match is None:
        raise Invalid.at(
            loc,
            f"the {kind} must be a base64 data: URL (data:<media type>;base64,...); "
            "the server does not fetch URLs",
        )
    return from_base64(kind, match["type"], match["data"], loc, name=name)


def kind_of(media_type: str) -> Kind | None:
    """Whether a file of `media_type` is read as an image, a document, or not at all."""
    media_type = media_type.strip().lower()
    for kind, types in MEDIA_TYPES.items():
        if media_type in types:
            return kind
    return None


def from_bytes(kind: Kind, media_type: str, raw: bytes, loc: Loc, *, name: str = "") -> Attachment:
    """A part given as bytes (A2A's `raw` part). Raises Invalid at `loc`."""
    return _attachment(kind, media_type, raw, loc, name)
