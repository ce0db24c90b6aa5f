"""promptfoo's assertions as a case's `expected` fields, and what the scorers reading them
will need (docs/api.md#importing-a-promptfoo-configuration): one handler a kind, and a
warning at its path for a kind nothing of ours checks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import re2

from agentbuilder.errors import Invalid, Loc


class Warn(Protocol):
    """Note what is left out of the import (or imported only approximately) at its path."""

    def __call__(self, loc: Loc, message: str, kind: str = "not_imported") -> None: ...


APPROXIMATED = "approximated"
_SPECIAL = frozenset("\\.^$|?*+()[]{}")


@dataclass(frozen=True)
class Assertion:
    kind: str  # promptfoo's type, without a `not-`
    negated: bool
    value: Any
    data: dict[str, Any]
    loc: Loc

    @classmethod
    def of(cls, item: Any, loc: Loc) -> Assertion:
        if not isinstance(item, dict):
            raise Invalid.at(loc, "an assertion: {type, value}")
        if "$ref" in item:
            return cls("$ref", False, None, item, loc)
        kind = item.get("type")
        if not isinstance(kind, str) or not kind:
            raise Invalid.at((*loc, "type"), "an assertion's type: contains, equals, regex, …")
        value = item.get("value")
        if isinstance(value, str) and value.startswith("file://"):
            raise Invalid.at(
                (*loc, "value"), "a value read from a file is not imported: write it out"
            )
        negated = kind.startswith("not-")
        return cls(kind.removeprefix("not-"), negated, value, item, loc)


@dataclass(frozen=True)
class Rubric:
    text: str
    pass_at: float | None  # the assertion's threshold: the least passing score
    grader: Any  # the promptfoo provider it names, if any
    loc: Loc


@dataclass
class CaseExpectation:
    """What one case's assertions ask: its `expected`, and what its scorers' options need."""

    agent_type: str
    expected: dict[str, Any] = field(default_factory=dict)
    ignore_case: list[tuple[bool, Loc]] = field(default_factory=list)  # per contains kind
    max_latency_ms: tuple[float, Loc] | None = None
    max_cost_usd: tuple[float, Loc] | None = None
    rubric: Rubric | None = None


Handler = Callable[[CaseExpectation, Assertion, Any, Any, Warn], None]


def apply(e: CaseExpectation, a: Assertion, value: Any, grader: Any, warn: Warn) -> None:
    """Record assertion `a` (its value rendered with the test's vars) on the case, or warn
    at its path that it is not imported."""
    if a.data.get("transform") is not None:
        warn((*a.loc, "transform"), "not imported: it runs code on the output before the check")
        return
    handler = _HANDLERS.get((a.kind, a.negated))
    if handler is None:
        warn(a.loc, _why_not(a))
        return
    handler(e, a, value, grader, warn)


def _why_not(a: Assertion) -> str:
    name = ("not-" if a.negated else "") + a.kind
    if a.kind == "$ref":
        return "not imported: a `$ref` assertion; write the assertion out in the test"
    if a.kind in ("javascript", "python", "ruby", "webhook"):
        return (
            f"not imported: promptfoo's `{name}` assertions run code; express the check as "
            "an expected field (contains, regex, outputSchema…) or a scorer"
        )
    if a.negated and a.kind in _POSITIVE:
        return f"not imported: nothing of ours checks `{name}` (only its positive form)"
    if a.kind in _MODEL_GRADED:
        return (
            f"not imported: `{name}` needs a model or embeddings of promptfoo's; `llm-rubric` "
            "is the model-graded kind imported (as the `judge` scorer)"
        )
    return f"not imported: no expected field or scorer of ours checks `{name}`"


_MODEL_GRADED = frozenset(
    [
        "similar",
        "factuality",
        "model-graded-closedqa",
        "model-graded-factuality",
        "answer-relevance",
        "context-faithfulness",
        "context-recall",
        "context-relevance",
        "conversation-relevance",
        "g-eval",
        "select-best",
        "max-score",
        "classifier",
        "moderation",
        "pi",
        "search-rubric",
        "agent-rubric",
    ]
)


# ---------------------------------------------------------------- handlers


def _text(value: Any, loc: Loc) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise Invalid.at(loc, "a string (or a number) to look for")
    return str(value)


def _texts(value: Any, loc: Loc) -> list[str]:
    # As promptfoo: a list, or a string of comma-separated values.
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not value:
        raise Invalid.at(loc, "a list of strings")
    return [_text(item, (*loc, i)) for i, item in enumerate(value)]


def _extend(e: CaseExpectation, key: str, texts: list[str], a: Assertion) -> None:
    e.expected[key] = [*e.expected.get(key, []), *texts]
    e.ignore_case.append((a.kind.startswith("i"), a.loc))


def _contains(e: CaseExpectation, a: Assertion, value: Any, grader: Any, warn: Warn) -> None:
    texts = (
        _texts(value, (*a.loc, "value"))
        if a.kind.endswith("-all") or a.kind.endswith("-any")
        else [_text(value, (*a.loc, "value"))]
    )
    _extend(e, "notContains" if a.negated else "contains", texts, a)


def _contains_any(e: CaseExpectation, a: Assertion, value: Any, grader: Any, warn: Warn) -> None:
    # One of several substrings: an alternation, in the case's one regex.
    alternation = "|".join(_escaped(t) for t in _texts(value, (*a.loc, "value")))
    _regex(e, a, ("(?i)" if a.kind.startswith("i") else "") + alternation, warn)


def _starts_with(e: CaseExpectation, a: Assertion, value: Any, grader: Any, warn: Warn) -> None:
    _regex(e, a, r"\A" + _escaped(_text(value, (*a.loc, "value"))), warn)


def _escaped(text: str) -> str:
    # re2.escape escapes every character but letters and digits: unreadable in the admin.
    return "".join("\\" + c if c in _SPECIAL else c for c in text)


def _regex_value(e: CaseExpectation, a: Assertion, value: Any, grader: Any, warn: Warn) -> None:
    loc = (*a.loc, "value")
    if not isinstance(value, str) or not value:
        raise Invalid.at(loc, "a regular expression")
    try:
        re2.compile(value)
    except re2.error as exc:
        raise Invalid.at(
            loc,
            f"not a regular expression we run (RE2 syntax: no lookaround or backreferences): {exc}",
        ) from None
    _regex(e, a, value, warn)


def _regex(e: CaseExpectation, a: Assertion, pattern: str, warn: Warn) -> None:
    if "regex" in e.expected and e.expected["regex"] != pattern:
        warn(a.loc, "not imported: the test has a regular expression already (a case has one)")
        return
    e.expected["regex"] = pattern


def _equals(e: CaseExpectation, a: Assertion, value: Any, grader: Any, warn: Warn) -> None:
    if value is None:
        raise Invalid.at((*a.loc, "value"), "the expected output")
    if "output" in e.expected and e.expected["output"] != value:
        warn(a.loc, "not imported: the test expects another output already")
        return
    e.expected["output"] = value


def _is_json(e: CaseExpectation, a: Assertion, value: Any, grader: Any, warn: Warn) -> None:
    if value is not None and not isinstance(value, dict):
        raise Invalid.at((*a.loc, "value"), "a JSON Schema (an object), or nothing")
    e.expected["outputSchema"] = value or {}


def _threshold(a: Assertion) -> float:
    threshold = a.data.get("threshold")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or threshold < 0:
        raise Invalid.at((*a.loc, "threshold"), "a number, at least 0")
    return float(threshold)


def _latency(e: CaseExpectation, a: Assertion, value: Any, grader: Any, warn: Warn) -> None:
    threshold = _threshold(a)
    if threshold < 1:
        raise Invalid.at((*a.loc, "threshold"), "a number of milliseconds, at least 1")
    e.max_latency_ms = _stricter(e.max_latency_ms, (threshold, a.loc))


def _cost(e: CaseExpectation, a: Assertion, value: Any, grader: Any, warn: Warn) -> None:
    if a.data.get("threshold") is None:
        warn(a.loc, "not imported: a `cost` without a threshold measures and checks nothing")
        return
    e.max_cost_usd = _stricter(e.max_cost_usd, (_threshold(a), a.loc))


def _stricter(
    current: tuple[float, Loc] | None, new: tuple[float, Loc]
) -> tuple[float, Loc] | None:
    return new if current is None or new[0] < current[0] else current


def _rubric(e: CaseExpectation, a: Assertion, value: Any, grader: Any, warn: Warn) -> None:
    if not isinstance(value, str) or not value.strip():
        raise Invalid.at((*a.loc, "value"), "the rubric: what a good answer does")
    if e.rubric is not None:
        warn(a.loc, "not imported: the test has a rubric already (one judge grades a case)")
        return
    threshold = a.data.get("threshold")
    if threshold is not None and (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0 <= threshold <= 1
    ):
        raise Invalid.at((*a.loc, "threshold"), "the least passing score, from 0 to 1")
    e.rubric = Rubric(value, threshold, grader, a.loc)


def _tools(e: CaseExpectation, a: Assertion, warn: Warn) -> list[dict[str, Any]] | None:
    if e.agent_type != "tool":
        warn(a.loc, f"not imported: a {e.agent_type} agent calls no tools")
        return None
    calls: list[dict[str, Any]] = e.expected.setdefault("toolCalls", [])
    return calls


def _tool_sequence(e: CaseExpectation, a: Assertion, value: Any, grader: Any, warn: Warn) -> None:
    steps = value.get("steps") if isinstance(value, dict) else None
    mode = value.get("mode", "in_order") if isinstance(value, dict) else None
    if not isinstance(steps, list) or not all(isinstance(s, str) and s for s in steps):
        raise Invalid.at((*a.loc, "value", "steps"), "the tools' names, in order")
    if mode not in ("in_order", "exact"):
        raise Invalid.at((*a.loc, "value", "mode"), "in_order or exact")
    calls = _tools(e, a, warn)
    if calls is None:
        return
    if calls:
        warn(a.loc, "not imported: the test expects tool calls already")
        return
    calls.extend({"name": step} for step in steps)
    e.expected["toolCallsOrder"] = mode


def _tool_used(e: CaseExpectation, a: Assertion, value: Any, grader: Any, warn: Warn) -> None:
    names = [value] if isinstance(value, str) else value
    if not (isinstance(names, list) and len(names) == 1 and isinstance(names[0], str)):
        # Several tools in any order, or patterns: our trajectory modes say other things.
        warn(a.loc, "not imported: only one tool's name carries over (as an expected call)")
        return
    calls = _tools(e, a, warn)
    if calls is not None and not any(c["name"] == names[0] for c in calls):
        calls.append({"name": names[0]})


def _tool_args(e: CaseExpectation, a: Assertion, value: Any, grader: Any, warn: Warn) -> None:
    spec = value if isinstance(value, dict) else {}
    name, arguments = spec.get("name"), spec.get("args", spec.get("arguments"))
    if not isinstance(name, str) or not isinstance(arguments, dict):
        if "pattern" in spec:
            warn(a.loc, "not imported: a tool named by a pattern")
            return
        raise Invalid.at((*a.loc, "value"), "{name, args}: a tool and the arguments it gets")
    if spec.get("mode", "partial") != "partial" or spec.get("defaults") or spec.get("ignore"):
        warn(a.loc, "not imported: only `partial` matching (named arguments, others allowed)")
        return
    calls = _tools(e, a, warn)
    if calls is None:
        return
    call = next((c for c in calls if c["name"] == name and "arguments" not in c), None)
    if call is None:
        calls.append({"name": name, "arguments": arguments})
    else:
        call["arguments"] = arguments


_HANDLERS: dict[tuple[str, bool], Handler] = {
    ("equals", False): _equals,
    ("contains", False): _contains,
    ("icontains", False): _contains,
    ("contains-all", False): _contains,
    ("icontains-all", False): _contains,
    ("contains", True): _contains,
    ("icontains", True): _contains,
    ("contains-any", True): _contains,  # none of them: each one not contained
    ("icontains-any", True): _contains,
    ("contains-any", False): _contains_any,
    ("icontains-any", False): _contains_any,
    ("starts-with", False): _starts_with,
    ("regex", False): _regex_value,
    ("is-json", False): _is_json,
    ("latency", False): _latency,
    ("cost", False): _cost,
    ("llm-rubric", False): _rubric,
    ("trajectory:tool-sequence", False): _tool_sequence,
    ("trajectory:tool-used", False): _tool_used,
    ("trajectory:tool-args-match", False): _tool_args,
}
_POSITIVE = frozenset(kind for kind, negated in _HANDLERS if not negated)
