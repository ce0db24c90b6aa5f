"""How the offline model reads arithmetic English and picks the tool that does it.

"What is 12 times 11?", "Multiply 7 by 6", "subtract 3 from 10", "seven times six": a
message becomes an `Operation`, one of the four with its two operands in the order the
operation takes them ("subtract 3 from 10" is 10 − 3). A tool is matched to it by what its
name and description mean, not by its name alone: a tool named `product` described
"Multiply two numbers" multiplies.

Number words are read by the small parser below, not by a library: the model needs 0 to
999 in English, word2number was last released in 2017, and text2num is a compiled
eight-language extension that leaves a lone "one" or "two" unconverted by default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from agents.llm.base import ToolSpec

Op = Literal["multiply", "add", "subtract", "divide"]

# ---------------------------------------------------------------- number words

_UNITS = "zero one two three four five six seven eight nine".split()  # noqa: SIM905
_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen"
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()  # noqa: SIM905
VALUES = {
    **{word: i for i, word in enumerate(_UNITS)},
    **{word: 10 + i for i, word in enumerate(_TEENS.split())},
    **{word: 10 * i for i, word in enumerate(_TENS, 2)},
}
_UNIT = "|".join(_UNITS[1:])
_TEEN = _TEENS.replace(" ", "|")
_BELOW_100 = rf"(?:(?:{'|'.join(_TENS)})(?:[-\s]+(?:{_UNIT}))?|{_TEEN}|{_UNIT}|zero)"
# "a hundred", "two hundred five", "twenty-one", "seven"; "a hundred and five" stays two
# numbers, because "add a hundred and five" asks for two.
_NUMBER_WORDS = re.compile(
    rf"\b(?:(a|{_UNIT})\s+hundred(?:\s+({_BELOW_100}))?|({_BELOW_100}))\b", re.IGNORECASE
)
_NEGATIVE = re.compile(r"\bnegative\s+(?=\d)", re.IGNORECASE)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def _below_100(words: str) -> int:
    return sum(VALUES[word] for word in re.split(r"[-\s]+", words.lower()))


def _number_value(match: re.Match[str]) -> str:
    multiplier, rest, small = match.groups()
    if small is not None:
        return str(_below_100(small))
    hundreds = 1 if multiplier.lower() == "a" else VALUES[multiplier.lower()]
    return str(hundreds * 100 + (_below_100(rest) if rest else 0))


def with_figures(text: str) -> str:
    """The text with its number words as figures: "twenty-one plus four" → "21 plus 4"."""
    text = _NUMBER_WORDS.sub(_number_value, _THOUSANDS.sub("", text))
    return _NEGATIVE.sub("-", text)


# ---------------------------------------------------------------- operations

# A figure not glued to a word, a date or a time on its left ("2024-01-15", "10:30") ...
_A = r"(?<![\w.:/-])(-?\d+(?:\.\d+)?)"
# ... nor on its right.
_B = r"(-?\d+(?:\.\d+)?)(?!\.?\d)(?![-/:]\d)"
# (pattern, operation, whether the operands come in the other order)
_FORMS: list[tuple[str, Op, bool]] = [
    (rf"\bmultiply\s+{_A}\s+(?:by|and|with|times)\s+{_B}", "multiply", False),
    (rf"\bproduct\s+of\s+{_A}\s+and\s+{_B}", "multiply", False),
    (rf"{_A}\s*(?:times|multiplied\s+by|x|×|\*)\s*{_B}", "multiply", False),
    (rf"\badd\s+{_A}\s+(?:and|plus|with)\s+{_B}", "add", False),
    (rf"\badd\s+{_A}\s+to\s+{_B}", "add", True),
    (rf"\b(?:sum|total)\s+of\s+{_A}\s+and\s+{_B}", "add", False),
    (rf"{_A}\s*(?:plus|\+)\s*{_B}", "add", False),
    (rf"{_A}\s+added\s+to\s+{_B}", "add", True),
    (rf"\bsubtract\s+{_A}\s+from\s+{_B}", "subtract", True),
    (rf"\btake\s+(?:away\s+)?{_A}\s+(?:away\s+)?from\s+{_B}", "subtract", True),
    (rf"\bdifference\s+(?:between|of)\s+{_A}\s+and\s+{_B}", "subtract", False),
    (rf"{_A}\s*(?:minus|take\s+away|less|-|−)\s*{_B}", "subtract", False),
    (rf"{_A}\s+subtracted\s+from\s+{_B}", "subtract", True),
    (rf"\bdivide\s+{_A}\s+by\s+{_B}", "divide", False),
    (rf"\bdivide\s+{_A}\s+into\s+{_B}", "divide", True),
    (rf"\b(?:quotient|ratio)\s+of\s+{_A}\s+(?:and|to|by)\s+{_B}", "divide", False),
    (rf"{_A}\s*(?:divided\s+by|over|/|÷)\s*{_B}", "divide", False),
]
_PATTERNS = [(re.compile(p, re.IGNORECASE), op, swap) for p, op, swap in _FORMS]
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|(?<!\w)'[^']*'(?!\w)")
SYMBOLS: dict[Op, str] = {"multiply": "×", "add": "+", "subtract": "−", "divide": "/"}
VERBS: dict[Op, str] = {
    "multiply": "multiplies",
    "add": "adds",
    "subtract": "subtracts",
    "divide": "divides",
}


@dataclass(frozen=True)
class Operation:
    op: Op
    a: float
    b: float

    def value(self) -> float | None:
        """The result; None for a division by zero."""
        if self.op == "multiply":
            return self.a * self.b
        if self.op == "add":
            return self.a + self.b
        if self.op == "subtract":
            return self.a - self.b
        return None if self.b == 0 else self.a / self.b

    def worked_out(self) -> str:
        """The operation and its result as a sentence: "2 + 3 = 5."."""
        shown = f"{figure(self.a)} {SYMBOLS[self.op]} {figure(self.b)}"
        value = self.value()
        if value is None:
            return f"{shown} has no value: no number can be divided by zero."
        return f"{shown} = {figure(value)}."


def read_operation(text: str) -> Operation | None:
    """The first operation the message asks for, if it asks for one; quoted text is not
    read, it is an argument of something else."""
    plain = with_figures(_QUOTED.sub(" ", text))
    found = [
        (match.start(), order, op, swap, match)
        for order, (pattern, op, swap) in enumerate(_PATTERNS)
        if (match := pattern.search(plain))
    ]
    if not found:
        return None
    _, _, op, swap, match = min(found, key=lambda f: (f[0], f[1]))
    a, b = float(match.group(1)), float(match.group(2))
    return Operation(op, b, a) if swap else Operation(op, a, b)


def figure(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.10g}"


# ---------------------------------------------------------------- the tool that does it

_SAID: dict[Op, str] = {
    "multiply": "multiply multiplies multiplied multiplying multiplication times product",
    "add": "add adds added adding addition sum plus",
    "subtract": "subtract subtracts subtracted subtracting subtraction difference minus",
    "divide": "divide divides divided dividing division quotient",
}
MEANINGS: dict[Op, frozenset[str]] = {op: frozenset(said.split()) for op, said in _SAID.items()}
# An operator between two one-letter or one-figure operands: "(a × b)", "a / b".
_FORMULA = re.compile(r"(?<!\w)[a-z0-9]\s*([×*+−/÷-])\s*[a-z0-9](?!\w)", re.IGNORECASE)
_FORMULA_OPS: dict[str, Op] = {
    "×": "multiply",
    "*": "multiply",
    "+": "add",
    "−": "subtract",
    "-": "subtract",
    "/": "divide",
    "÷": "divide",
}


def _name_words(name: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    return set(re.findall(r"[a-z]+", spaced.lower()))


def numeric_parameters(tool: ToolSpec) -> list[str]:
    """The names of the tool's number parameters, in the schema's order."""
    properties = tool.parameters.get("properties", {})
    return [
        name
        for name, prop in properties.items()
        if isinstance(prop, dict) and prop.get("type") in ("number", "integer")
    ]


def _meaning_score(tool: ToolSpec, op: Op) -> int:
    words = MEANINGS[op]
    described = set(re.findall(r"[a-z]+", tool.description.lower()))
    formulas = {_FORMULA_OPS[m.group(1)] for m in _FORMULA.finditer(tool.description)}
    return 2 * len(_name_words(tool.name) & words) + len(described & words) + (op in formulas)


def arithmetic_tool(tools: tuple[ToolSpec, ...], op: Op) -> ToolSpec | None:
    """The tool that does `op`: two number parameters, and the best name and description
    for it; the first such tool on a tie."""
    best, best_score = None, 0
    for tool in tools:
        if len(numeric_parameters(tool)) < 2:
            continue
        score = _meaning_score(tool, op)
        if score > best_score:
            best, best_score = tool, score
    return best


def operation_arguments(tool: ToolSpec, operation: Operation) -> dict[str, Any]:
    """The operands for the tool's first two number parameters, a then b. A fraction stays a
    fraction even for an integer parameter: the tool then says so, rather than the model
    quietly rounding."""
    first, second = numeric_parameters(tool)[:2]
    return {first: _json_number(operation.a), second: _json_number(operation.b)}


def _json_number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value
