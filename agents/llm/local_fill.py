"""How the offline model fills a JSON Schema from text, always schema-valid.

Names come from runs of capitalised words, integers and numbers from the figures of the
text, and other strings from the phrase that the property's name or description points at
("occupation" or "job" points at what follows "is a"). What cannot be found is left out
unless required, then it gets the type's plain value.
"""

from __future__ import annotations

import re
from typing import Any

_CAPITALISED_RUN = re.compile(r"\b([A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+)+)\b")
_SINGLE_CAPITALISED = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z'’-]+)\b")
_FIGURE = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b")
_AGE_ADJECTIVE = r"(?:\d+[- ]years?[- ]old\s+)?"
_ROLE = re.compile(
    r"\b(?:is|was|works as|working as|employed as)\s+(?:an?|the)\s+"
    + _AGE_ADJECTIVE
    + r"([a-z][a-z -]*?)(?=[.,;!?]|\s+(?:at|in|for|from|who|and|with)\b|$)"
)
_PLACE = re.compile(r"\b(?:in|from|lives in|based in)\s+([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)")
_ORGANISATION = re.compile(r"\b(?:at|for|with)\s+([A-Z][\w&'’-]*(?:\s+[A-Z][\w&'’-]*)*)")

# Words in a property's name or description that say which phrase it wants.
CUES: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    (("email", "e-mail"), _EMAIL),
    (("date", "birthday", "born", "when"), _DATE),
    (("job", "occupation", "profession", "role", "title", "position", "work"), _ROLE),
    (("city", "country", "location", "place", "address", "where", "town"), _PLACE),
    (("company", "employer", "organization", "organisation", "firm"), _ORGANISATION),
]


def fill_schema(schema: dict[str, Any], text: str) -> dict[str, Any]:
    figures = [float(f) for f in _FIGURE.findall(_without_dates(text))]
    result: dict[str, Any] = {}
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        value = _value(name, prop, text, figures)
        if value is None and name in required:
            value = _plain(prop)
        if value is not None:
            result[name] = value
    return result


def _value(name: str, prop: dict[str, Any], text: str, figures: list[float]) -> Any:
    kind = prop.get("type")
    hint = f"{name} {prop.get('description', '')}".lower()
    if "enum" in prop:
        return next((v for v in prop["enum"] if str(v).lower() in text.lower()), None)
    if kind in ("integer", "number"):
        if not figures:
            return None
        figure = figures.pop(0)
        return int(figure) if kind == "integer" else figure
    if kind == "boolean":
        return None
    if kind == "string":
        return _string(hint, text)
    if kind == "object":
        return fill_schema(prop, text)
    return None


def _string(hint: str, text: str) -> str | None:
    for words, pattern in CUES:
        if any(w in hint for w in words):
            match = pattern.search(text)
            return (match.group(1) if match.groups() else match.group(0)).strip() if match else None
    if "name" in hint:
        run = _CAPITALISED_RUN.search(text)
        if run:
            return run.group(1)
        single = _SINGLE_CAPITALISED.search(text)
        return single.group(1) if single else None
    return None


def _plain(prop: dict[str, Any]) -> Any:
    return {
        "string": "",
        "integer": 0,
        "number": 0,
        "boolean": False,
        "array": [],
        "object": {},
    }.get(prop.get("type", "string"), "")


def _without_dates(text: str) -> str:
    return _DATE.sub(" ", text)
