"""The sandbox task prompts render in: Jinja2's immutable sandbox, with every way a template
can build something large or run long held to a Budget.

Values a template builds (literals, arithmetic, `~`, calls, filters) are checked as they are
made, against the limit on characters, before the big allocations (`'x' * n`, `center(n)`,
`replace`, `join`, format widths) happen; what it writes, anywhere (macros and captured
blocks too), is counted as it is written; loops and calls are counted and the clock checked.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Cycler, Joiner, Namespace
from jinja2.visitor import NodeTransformer

from agents.templating.bounded import (
    METHODS,
    bounded_filters,
    bounded_range,
    check_format_spec,
    check_printf,
    finalize,
    text_method,
)
from agents.templating.budget import Budget, TemplateLimitError, TemplateLimits, current, spending
from agents.templating.budget import weight as weight_of

# ---------------------------------------------------------------- the environment


class _Bounds(NodeTransformer):
    """Rewrites a parsed template so loops, literals and `~` go through the bounded steps,
    and its literal text through finalize, where it is counted."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = _filter(node.iter, "_loop_step")  # type: ignore[arg-type]
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _filter(nodes.List(node.nodes, lineno=node.lineno), "_concat")

    def visit_List(self, node: nodes.List) -> nodes.Node:
        self.generic_visit(node)
        return _filter(node, "_sized")

    def visit_Dict(self, node: nodes.Dict) -> nodes.Node:
        self.generic_visit(node)
        return _filter(node, "_sized")

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Node:
        self.generic_visit(node)
        return _filter(node, "_sized") if node.ctx == "load" else node

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        self.generic_visit(node)
        node.nodes = [
            nodes.Const(child.data, lineno=child.lineno)
            if isinstance(child, nodes.TemplateData)
            else child
            for child in node.nodes
        ]
        return node


def _filter(node: nodes.Expr, name: str) -> nodes.Filter:
    return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})

    def __init__(self) -> None:
        super().__init__(
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            finalize=finalize,
            keep_trailing_newline=True,
            optimized=False,  # no folding of constants, filters included, at compile time
        )
        self.filters = bounded_filters(self.filters)
        self.globals = {
            "range": bounded_range,
            "dict": dict,
            "cycler": Cycler,
            "joiner": Joiner,
            "namespace": Namespace,
        }

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if not super().is_safe_attribute(obj, attr, value):
            return False
        if not callable(value):
            return True
        for kind, names in METHODS:
            if isinstance(obj, kind):
                return attr in names
        return True

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        budget = current()
        budget.tick()
        if operator == "*":
            _check_repeat(left, right, budget)
        elif operator == "**":
            _check_power(left, right, budget)
        elif operator == "%" and isinstance(left, str):
            check_printf(left, budget)
        elif operator == "+" and isinstance(left, str) and isinstance(right, str):
            budget.fits(len(left) + len(right), "a joined text")
        return budget.sized(super().call_binop(context, operator, left, right))

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        budget = current()
        budget.step()
        if not self.is_safe_callable(obj):
            return super().call(context, obj, *args, **kwargs)  # which refuses it
        owner = getattr(obj, "__self__", None)
        if isinstance(owner, str) and isinstance(obj, types.BuiltinMethodType | types.MethodType):
            return budget.sized(text_method(owner, obj.__name__, args, kwargs))
        return budget.sized(super().call(context, obj, *args, **kwargs))

    def getattr(self, obj: Any, attribute: str) -> Any:
        current().tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        current().tick()
        return super().getitem(obj, argument)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        fmt = value.__self__

        def bounded(*args: Any, **kwargs: Any) -> str:
            budget = current()
            check_format_spec(fmt, budget)
            for argument in (*args, *kwargs.values()):
                if isinstance(argument, Mapping):  # format_map's
                    budget.sized(argument)
            return budget.sized(wrapped(*args, **kwargs))

        return bounded


def _check_repeat(left: Any, right: Any, budget: Budget) -> None:
    if isinstance(left, int) and isinstance(right, int):
        if left.bit_length() + right.bit_length() > budget.limits.max_int_bits:
            raise TemplateLimitError(f"a number would be over {budget.limits.max_int_bits} bits")
        return
    for sequence, times in ((left, right), (right, left)):
        if isinstance(times, int) and isinstance(sequence, str | list | tuple):
            size = weight_of(sequence, budget.limits.max_chars, budget) * max(times, 0)
            budget.fits(size, "repeating a text or list")


def _check_power(base: Any, exponent: Any, budget: Budget) -> None:
    if not (isinstance(base, int) and isinstance(exponent, int)):
        return
    if exponent > 0 and abs(base) > 1 and base.bit_length() * exponent > budget.limits.max_int_bits:
        raise TemplateLimitError(f"a power would be over {budget.limits.max_int_bits} bits")


ENVIRONMENT = BoundedEnvironment()


@functools.lru_cache(maxsize=256)
def compiled(source: str) -> jinja2.Template:
    """The template, rewritten to stay within bounds. Raises TemplateSyntaxError, an unknown
    (or dropped) filter included, and RecursionError for one nested past the parser."""
    tree = _Bounds().visit(ENVIRONMENT.parse(source))
    tree.set_environment(ENVIRONMENT)
    return ENVIRONMENT.from_string(tree)


def render(source: str, variables: Mapping[str, Any], limits: TemplateLimits) -> str:
    """The template filled in, streamed and stopped past `limits.max_chars`.

    Raises TemplateLimitError past a limit, jinja2.UndefinedError for a missing variable,
    other TemplateErrors, and what the template's own arithmetic raises (ZeroDivisionError…).
    """
    template = compiled(source)
    parts: list[str] = []
    size = 0
    with spending(limits):
        try:
            for piece in template.generate(**variables):
                size += len(piece)
                if size > limits.max_chars:
                    raise TemplateLimitError(
                        f"the prompt would be over {limits.max_chars} characters"
                    )
                parts.append(piece)
        except RecursionError:
            raise TemplateLimitError("macros call each other too deeply") from None
    return "".join(parts)
