"""The checked operations a bounded template runs: method and filter calls whose size
arguments are checked before they run, the loop, literal and `~` steps the compiled template
goes through, the bounded globals, and finalize, which counts every character written."""

from __future__ import annotations

import functools
import json
import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import jinja2
from jinja2.nodes import EvalContext
from jinja2.utils import pass_eval_context

from agents.templating.budget import Budget, TemplateLimitError, current
from agents.templating.budget import weight as weight_of

# Their regular expressions and text wrapping run long with no hook to stop them
# (striptags is quadratic on "<<<<…"): a template naming one is refused when saved.
DROPPED_FILTERS = frozenset({"striptags", "urlize", "wordwrap"})
# Reading methods only; the sizes the growing ones (center, replace, join…) ask for are
# checked before they run. Anything else, translate and expandtabs among them, is refused.
_TEXT_METHODS = frozenset(
    [
        "capitalize",
        "casefold",
        "center",
        "count",
        "endswith",
        "find",
        "format",
        "format_map",
        "index",
        "isalnum",
        "isalpha",
        "isascii",
        "isdecimal",
        "isdigit",
        "islower",
        "isnumeric",
        "isspace",
        "istitle",
        "isupper",
        "join",
        "ljust",
        "lower",
        "lstrip",
        "partition",
        "removeprefix",
        "removesuffix",
        "replace",
        "rfind",
        "rindex",
        "rjust",
        "rpartition",
        "rsplit",
        "rstrip",
        "split",
        "splitlines",
        "startswith",
        "strip",
        "swapcase",
        "title",
        "upper",
        "zfill",
    ]
)
METHODS: tuple[tuple[tuple[type, ...], frozenset[str]], ...] = (
    ((str,), _TEXT_METHODS),
    ((dict,), frozenset({"get", "items", "keys", "values"})),
    ((list, tuple), frozenset({"count", "index"})),
    ((int, float), frozenset({"is_integer", "bit_length"})),
)
_PRINTF_FIELD = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")


def _number(value: Any, budget: Budget, what: str) -> None:
    if isinstance(value, int) and not isinstance(value, bool):
        budget.fits(value, what)


def check_printf(fmt: str, budget: Budget) -> None:
    for match in _PRINTF_FIELD.finditer(fmt):
        for number in match.groups():
            if number == "*":
                raise TemplateLimitError("a '*' width in a % format is not allowed in templates")
            if number:
                budget.fits(int(number) if len(number) < 10 else 10**10, "a % format's width")


def check_format_spec(fmt: str, budget: Budget) -> None:
    for _text, _field, spec, _conversion in string.Formatter().parse(fmt):
        if spec and "{" in spec:
            raise TemplateLimitError("a width from an argument is not allowed in templates")
        for number in re.findall(r"\d+", spec or ""):
            budget.fits(int(number) if len(number) < 10 else 10**10, "a format's width")


def _check_replace(text: str, old: Any, new: Any, count: Any, budget: Budget) -> None:
    old_text, new_text = str(old), str(new)
    found = text.count(old_text) if old_text else len(text) + 1
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    budget.fits(len(text) + found * max(len(new_text) - len(old_text), 0), "a replaced text")


def _joined(separator: str, items: Iterable[Any], budget: Budget) -> list[Any]:
    """The items, once their joined size is known to fit."""
    listed = list(items)
    # A lower bound of the check below (an item weighs at least 1), from two lengths: a
    # join whose separators alone are over the limit stops here, before the items are
    # weighed one by one (a count, which no busy machine makes slower to reach).
    separators = len(separator) * max(len(listed) - 1, 0)
    budget.fits(separators + len(listed), "a joined text")
    size = weight_of(listed, budget.limits.max_chars, budget)
    budget.fits(size + separators, "a joined text")
    return listed


def text_method(text: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    budget = current()
    if name in ("center", "ljust", "rjust", "zfill"):
        _number(args[0] if args else kwargs.get("width"), budget, f"{name}()'s width")
    elif name == "replace" and len(args) >= 2:
        count = args[2] if len(args) > 2 else kwargs.get("count", -1)
        _check_replace(text, args[0], args[1], count, budget)
    elif name == "join" and args:
        return text.join(_joined(text, args[0], budget))
    return getattr(text, name)(*args, **kwargs)


# ---------------------------------------------------------------- filters and globals


def _value_first(check: Callable[..., Any]) -> Callable[..., Any]:
    """A check of a filter's arguments that hands the value on unchanged."""

    def checked(budget: Budget, value: Any, *args: Any, **kwargs: Any) -> Any:
        check(budget, value, *args, **kwargs)
        return value

    return checked


def _indent(budget: Budget, s: Any, width: Any = 4, *_: Any, **__: Any) -> None:
    text, step = str(s), len(width) if isinstance(width, str) else width
    if isinstance(step, int):
        budget.fits(len(text) + (text.count("\n") + 1) * step, "an indented text")


def _sum(budget: Budget, iterable: Any, attribute: Any = None, start: Any = 0) -> None:
    if not isinstance(start, int | float):  # adding lists copies quadratically
        raise TemplateLimitError("the sum filter adds numbers only in templates")


def _join(budget: Budget, value: Iterable[Any], d: Any = "", *_: Any, **__: Any) -> list[Any]:
    return _joined(str(d), value, budget)


# Filters that take a size, checked before they run: (budget, value, *arguments) -> value.
_BEFORE: dict[str, Callable[..., Any]] = {
    "center": _value_first(lambda b, v, width=80: _number(width, b, "center's width")),
    "indent": _value_first(_indent),
    "format": _value_first(lambda b, v, *a, **k: check_printf(str(v), b)),
    "replace": _value_first(
        lambda b, v, old, new, count=None: _check_replace(str(v), old, new, count, b)
    ),
    "join": _join,
    "batch": _value_first(lambda b, v, linecount, *_: _number(linecount, b, "batch's size")),
    "slice": _value_first(lambda b, v, slices, *_: _number(slices, b, "slice's count")),
    "sum": _value_first(_sum),
}


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    before = _BEFORE.get(name)
    # A filter marked pass_context (or eval_context, environment) takes that first.
    skip = 0 if getattr(function, "jinja_pass_arg", None) is None else 1

    @functools.wraps(function)  # keeps that mark
    def bounded(*args: Any, **kwargs: Any) -> Any:
        budget = current()
        budget.tick()
        if before is not None and len(args) > skip:
            value = before(budget, *args[skip:], **kwargs)
            args = (*args[:skip], value, *args[skip + 1 :])
        return budget.sized(function(*args, **kwargs))

    return bounded


def bounded_filters(base: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """Jinja's filters less the dropped ones, each result checked, sizes checked first."""
    filters = {
        name: _bounded_filter(name, function)
        for name, function in base.items()
        if name not in DROPPED_FILTERS
    }
    return {**filters, "_loop_step": _loop_step, "_sized": _sized, "_concat": _concat}


def _loop_step(iterable: Iterable[Any]) -> Iterator[Any]:
    budget = current()
    for item in iterable:
        budget.step()
        yield item


def _sized(value: Any) -> Any:
    return current().sized(value)


def _concat(items: list[Any]) -> str:
    """`a ~ b`: each part made text (a missing variable raises), the sum within limits."""
    budget = current()
    parts: list[str] = []
    size = 0
    for item in items:
        if not isinstance(item, str):
            budget.fits(weight_of(item, budget.limits.max_chars, budget), "a joined text")
        part = str(item)
        size += len(part)
        budget.fits(size, "a joined text")
        parts.append(part)
    return "".join(parts)


def bounded_range(*args: int) -> range:
    numbers = range(*args)
    budget = current()
    try:
        count = len(numbers)
    except OverflowError:
        count = budget.limits.max_steps + 1
    if count > budget.limits.max_steps:
        raise TemplateLimitError(
            f"range() of more than {budget.limits.max_steps} numbers: a template may loop at "
            f"most {budget.limits.max_steps} times"
        )
    return numbers


def _plain(value: Any) -> Any:
    if isinstance(value, range | set | frozenset):
        return list(value)
    return str(value)


@pass_eval_context
def finalize(eval_ctx: EvalContext, value: Any) -> Any:
    """Every piece written, template text included (see _Bounds.visit_Output), is counted."""
    budget = current()
    budget.tick()
    if isinstance(value, jinja2.Undefined):
        return value  # a StrictUndefined raises when made text: a missing variable
    if isinstance(value, str):
        text = value
    else:
        budget.fits(weight_of(value, budget.limits.max_chars, budget), "a printed value")
        text = json.dumps(value, ensure_ascii=False, default=_plain)
    budget.write(len(text))
    return text
