"""What can be seen of a template's limits before it runs, for a 400 when it is saved: a
constant `range(10**9)`, loops nested past the step limit, a text or list repeated a
constant number of times past the character limit, powers and widths past theirs.

Only constants (and the input schema's types) are judged here; everything else is bounded
while rendering.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
from jinja2 import meta, nodes

from agents.templating.budget import TemplateLimits
from agents.templating.environment import ENVIRONMENT, compiled

_ARITHMETIC: dict[type[nodes.Node], Callable[[int, int], int]] = {
    nodes.Add: operator.add,
    nodes.Sub: operator.sub,
    nodes.Mul: operator.mul,
    nodes.FloorDiv: operator.floordiv,
    nodes.Mod: operator.mod,
    nodes.Pow: operator.pow,
}
# Arguments that are sizes, by filter and by text method: (position after the value, name).
_SIZES = {
    "center": (0, "width"),
    "indent": (0, "width"),
    "batch": (0, "linecount"),
    "slice": (0, "slices"),
}
_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})
_SEQUENCE_TYPES = frozenset({"string", "array"})


class TooLarge(ValueError):
    """A template that would go over a limit, whatever its inputs; the message says where."""


def parse(source: str) -> nodes.Template:
    """The template's tree; raises ValueError for a syntax error, an unknown filter or a
    template nested past what the parser can follow."""
    try:
        compiled(source)  # compiling finds unknown (and dropped) filters too
        return _tree(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ValueError(f"template syntax error on line {exc.lineno}: {exc.message}") from exc
    except RecursionError:
        raise ValueError("the template is nested too deeply") from None


@functools.lru_cache(maxsize=256)
def _tree(source: str) -> nodes.Template:
    # Every run validates its config again: parse each template once. Read, never changed.
    return ENVIRONMENT.parse(source)


def template_variables(source: str) -> set[str]:
    """The variables a template uses; raises ValueError as `parse` does."""
    return meta.find_undeclared_variables(parse(source))


def check_limits(source: str, limits: TemplateLimits, types: Mapping[str, str]) -> None:
    """Raise TooLarge when the template's constants already go over `limits`. `types`: the
    JSON Schema type of each input, so `name * 100000000` is known to repeat a string."""
    _check(source, limits, frozenset(types.items()))


@functools.lru_cache(maxsize=256)
def _check(source: str, limits: TemplateLimits, types: frozenset[tuple[str, str]]) -> None:
    tree = parse(source)
    judge = _Judge(limits, dict(types))
    try:
        for node in tree.find_all(nodes.Expr):
            judge.expression(node)
        judge.loops(tree, 1)
    except RecursionError:
        raise ValueError("the template is nested too deeply") from None


class _Judge:
    def __init__(self, limits: TemplateLimits, types: dict[str, str]) -> None:
        self.limits = limits
        self.types = types

    def number(self, node: nodes.Node) -> int | None:
        """The integer a constant expression comes to, or None if it is not one."""
        if isinstance(node, nodes.Const):
            value = node.value
            return value if isinstance(value, int) and not isinstance(value, bool) else None
        if isinstance(node, nodes.Neg | nodes.Pos):
            inner = self.number(node.node)
            return None if inner is None else (-inner if isinstance(node, nodes.Neg) else inner)
        function = _ARITHMETIC.get(type(node))
        if function is None or not isinstance(node, nodes.BinExpr):
            return None
        left, right = self.number(node.left), self.number(node.right)
        if left is None or right is None or (right == 0 and function in _DIVISIONS):
            return None
        bits = self.limits.max_int_bits
        if isinstance(node, nodes.Pow):
            if right < 0:
                return None
            if abs(left) > 1 and left.bit_length() * right > bits:
                raise TooLarge(f"a power of {left} to {right} is over {bits} bits")
        if isinstance(node, nodes.Mul) and left.bit_length() + right.bit_length() > bits:
            raise TooLarge(f"a product is over {bits} bits")
        return function(left, right)

    def items(self, node: nodes.Node) -> int | None:
        """How many characters or items a text or list expression has at least, when it is
        sure to be one: 1 for an input the schema says is a string or an array."""
        if isinstance(node, nodes.Const) and isinstance(node.value, str | list | tuple):
            return len(node.value)
        if isinstance(node, nodes.List | nodes.Tuple):
            return len(node.items)
        if isinstance(node, nodes.Concat):
            return sum(self.items(n) or 0 for n in node.nodes)
        if isinstance(node, nodes.Name) and self.types.get(node.name) in _SEQUENCE_TYPES:
            return 1
        if isinstance(node, nodes.Mul):
            times = self.number(node.right)
            inner = self.items(node.left)
            return None if times is None or inner is None else inner * times
        return None

    def expression(self, node: nodes.Node) -> None:
        most = self.limits.max_chars
        if isinstance(node, nodes.BinExpr):
            self.number(node)  # a constant power or product over its bits
        if isinstance(node, nodes.Mul):
            for sequence, times in ((node.left, node.right), (node.right, node.left)):
                count, size = self.number(times), self.items(sequence)
                if count is not None and size is not None and count * max(size, 1) > most:
                    raise TooLarge(
                        f"repeating a text or list {count} times is over the limit of {most} "
                        "characters"
                    )
        elif isinstance(node, nodes.Call):
            self.call(node)
        elif isinstance(node, nodes.Filter) and node.name in _SIZES:
            self.size_argument(node.name, node, *_SIZES[node.name])

    def call(self, node: nodes.Call) -> None:
        if isinstance(node.node, nodes.Name) and node.node.name == "range":
            count = self.range_length(node)
            if count is not None and count > self.limits.max_steps:
                raise TooLarge(
                    f"range() of {count} numbers is over the limit of {self.limits.max_steps} "
                    "loop iterations"
                )
        elif isinstance(node.node, nodes.Getattr) and node.node.attr in _WIDTH_METHODS:
            self.size_argument(f"{node.node.attr}()", node, 0, "width")

    def size_argument(self, what: str, node: nodes.Call | nodes.Filter, at: int, name: str) -> None:
        arguments = [*node.args, *(k.value for k in node.kwargs if k.key == name)]
        value = self.number(arguments[at]) if len(arguments) > at else None
        if value is not None and value > self.limits.max_chars:
            raise TooLarge(f"{what} of {value} is over the limit of {self.limits.max_chars}")

    def range_length(self, node: nodes.Call) -> int | None:
        if node.kwargs or node.dyn_args or node.dyn_kwargs or not 1 <= len(node.args) <= 3:
            return None
        bounds = [self.number(a) for a in node.args]
        if any(b is None for b in bounds):
            return None
        try:
            return len(range(*bounds))  # type: ignore[arg-type]
        except (ValueError, OverflowError):  # a zero step; more numbers than an int holds
            return None if 0 in bounds[2:] else self.limits.max_steps + 1

    def loops(self, node: nodes.Node, runs: int) -> None:
        """Refuse loops nested past the step limit when each one's length is constant."""
        for child in node.iter_child_nodes():
            if isinstance(child, nodes.For):
                length = self.loop_length(child.iter)
                total = runs * (length if length is not None else 1)
                if length is not None and total > self.limits.max_steps:
                    raise TooLarge(
                        f"nested loops run {total} times, over the limit of "
                        f"{self.limits.max_steps} loop iterations"
                    )
                self.loops(child, total)
            else:
                self.loops(child, runs)

    def loop_length(self, node: nodes.Node) -> int | None:
        if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name):
            return self.range_length(node) if node.node.name == "range" else None
        if isinstance(node, nodes.List | nodes.Tuple):
            return len(node.items)
        return None


_DIVISIONS = (operator.floordiv, operator.mod)


def field_types(schema: Mapping[str, Any]) -> dict[str, str]:
    """The JSON Schema type of each top-level property that names exactly one."""
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        return {}
    return {
        name: prop["type"]
        for name, prop in properties.items()
        if isinstance(prop, Mapping) and isinstance(prop.get("type"), str)
    }
