"""HxQL, the document filter of docs/api.md#hxql: `SELECT * FROM SysContent [WHERE cond]`.

sqlglot tokenizes and parses the query (PostgreSQL dialect); this module accepts only the
grammar below and turns the WHERE tree into a Django Q, so every value reaches the database
as a parameter.

- Keywords and the table name are case-insensitive. Field names are case-sensitive:
  sys_id, sys_title, sys_docType, sys_created; any other `sys_` name is refused, any other
  name is a metadata key. Unquoted keys are ASCII letters, digits and underscores (a few
  SQL keywords such as `type` or `date` work too); a double-quoted key may hold any other
  character, but not be empty or an integer, which Django would read as an array index.
- A comparison has the field on the left and one literal on the right: 'text' ('' for a
  quote), integers, decimals, TRUE, FALSE; NULL only in IS [NOT] NULL.
- Metadata comparisons are typed: 'x' matches the JSON string "x", 5 the number 5 (or 5.0),
  TRUE the boolean; <, <=, >, >= only see values of the literal's JSON type. LIKE reads the
  value as text: % any run, _ one character, backslash escapes; case-sensitive.
- A missing key, or one holding JSON null, is NULL: only IS NULL matches it; as in SQL,
  neither `k = 'x'` nor `k != 'x'` does.
- sys_id takes a UUID string (=, !=, IN); sys_created takes an ISO date or datetime: a date
  compares with the day in TIME_ZONE, a naive datetime is read in TIME_ZONE.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import date, datetime
from functools import reduce
from operator import and_, or_
from typing import Any

from django.db.models import CharField, Func, JSONField, Q, Value, lookups
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.utils import timezone
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import ParseError, TokenError
from sqlglot.parsers.postgres import PostgresParser
from sqlglot.tokens import Token, TokenType

Scalar = str | int | float | bool

MAX_LENGTH = 10_000
_FIELDS = {
    "sys_id": "id",
    "sys_title": "title",
    "sys_docType": "doc_type",
    "sys_created": "created_at",
}
_OPERATORS: dict[type[exp.Expr], type[lookups.Lookup[Any]]] = {
    exp.EQ: lookups.Exact,
    exp.NEQ: lookups.Exact,  # then negated
    exp.LT: lookups.LessThan,
    exp.LTE: lookups.LessThanOrEqual,
    exp.GT: lookups.GreaterThan,
    exp.GTE: lookups.GreaterThanOrEqual,
}
_HEAD = [TokenType.SELECT, TokenType.STAR, TokenType.FROM]
_PLAIN_TOKENS = {
    *(TokenType.NEQ, TokenType.LT, TokenType.LTE, TokenType.GT, TokenType.GTE),
    *(TokenType.IN, TokenType.NOT, TokenType.LIKE, TokenType.IS, TokenType.AND, TokenType.OR),
    *(TokenType.L_PAREN, TokenType.R_PAREN, TokenType.COMMA, TokenType.DASH),
    *(TokenType.STRING, TokenType.TRUE, TokenType.FALSE, TokenType.NULL),
}
# sqlglot accepts `IN (1,)`, `a NOT NULL` and `a NOT IS NULL`; PostgreSQL does not.
_LENIENT_PAIRS = {
    (TokenType.COMMA, TokenType.R_PAREN),
    (TokenType.NOT, TokenType.NULL),
    (TokenType.NOT, TokenType.IS),
}
_SELECT_ARGS = {"expressions", "from_", "where"}
_UNQUOTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"\d+(\.\d+)?")
# A double's range and far past its precision: a longer literal is not a value one means (and
# 1000…(5,000 zeros).5 would become Infinity, an int that many digits a ValueError).
MAX_NUMBER_DIGITS = 300
_DATE = re.compile(r"\d{4}-?\d{2}-?\d{2}")
# Text up to the first quote or /* comment the tokenizer could not close.
_CLOSED = re.compile(r"""(?:[^'"/]|/(?!\*)|'(?:[^']|'')*+'|"(?:[^"]|"")*+")*""")


class HxqlError(ValueError):
    """A query outside HxQL; `position` is the 0-based offset of the offending text."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} at position {position}")
        self.message = message
        self.position = position


class _Parser(PostgresParser):
    # sqlglot gives TRUE, FALSE and NULL no position; errors about them need one.
    PRIMARY_PARSERS = {
        **PostgresParser.PRIMARY_PARSERS,
        TokenType.NULL: lambda self, token: self.expression(exp.Null(), token),
        TokenType.TRUE: lambda self, token: self.expression(exp.Boolean(this=True), token),
        TokenType.FALSE: lambda self, token: self.expression(exp.Boolean(this=False), token),
    }


class _JsonbTypeof(Func):
    function = "jsonb_typeof"
    output_field = CharField()


def parse_hxql(query: str) -> Q:
    """Translate an HxQL query into a filter on documents (`Q()` without WHERE).

    Raises HxqlError for anything outside the grammar, naming its position."""
    if len(query) > MAX_LENGTH:
        raise HxqlError(f"query longer than {MAX_LENGTH} characters", MAX_LENGTH)
    if "\x00" in query:
        raise HxqlError("unexpected NUL character", query.index("\x00"))
    tokens = _tokenize(query)
    if not _check_head(query, tokens):
        return Q()
    try:
        return _condition(_parse(query, tokens))
    except RecursionError:
        raise HxqlError("query nests too deeply", max(query.find("("), 0)) from None


def _tokenize(query: str) -> list[Token]:
    try:
        tokens = Postgres().tokenize(query)
    except TokenError:
        match = _CLOSED.match(query)
        raise HxqlError("unterminated quote or comment", match.end() if match else 0) from None
    # The tokenizer drops comments: any text between tokens is one.
    for end, token in zip([-1, *(t.end for t in tokens)], [*tokens, None], strict=True):
        gap = query[end + 1 : token.start if token else len(query)]
        if gap.strip():
            raise HxqlError("comments are not allowed", end + 1 + gap.index(gap.strip()))
    if tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        tokens.pop()
    for index, token in enumerate(tokens):
        if token.token_type == TokenType.SEMICOLON:
            raise _unexpected(query, tokens[min(index + 1, len(tokens) - 1)])
    return tokens


def _check_head(query: str, tokens: list[Token]) -> bool:
    """Check `SELECT * FROM SysContent [WHERE ...`; tell whether a condition follows."""
    for index, text in enumerate(["SELECT", "*", "FROM", "SysContent"]):
        if index == len(tokens):
            raise HxqlError(f"expected {text}", len(query))
        if index < len(_HEAD) and tokens[index].token_type != _HEAD[index]:
            raise HxqlError(f"expected {text}, not '{tokens[index].text}'", tokens[index].start)
    table = tokens[3]
    named = table.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
    if not named or table.text.lower() != "syscontent":
        raise HxqlError(f"unknown table '{table.text}'", table.start)
    if len(tokens) > 4 and tokens[4].token_type != TokenType.WHERE:
        raise _unexpected(query, tokens[4])
    if len(tokens) == 5:
        raise HxqlError("expected a condition after WHERE", tokens[4].end + 1)
    return len(tokens) > 4


def _parse(query: str, tokens: list[Token]) -> exp.Expr:
    """Parse the statement and return its WHERE condition."""
    try:
        statement = _Parser(dialect=Postgres).parse(tokens, query)[0]
    except ParseError as error:
        raise _syntax_error(query, error) from None
    if statement is None:
        raise HxqlError("expected SELECT", 0)
    _check_tokens(query, tokens[5:], statement)
    # The token check has named any other clause already; this keeps the tree honest too.
    extra = [key for key, value in statement.args.items() if value and key not in _SELECT_ARGS]
    where = statement.args.get("where")
    if not isinstance(statement, exp.Select) or extra or not isinstance(where, exp.Where):
        raise HxqlError("unexpected clause", 0)
    return where.this


def _syntax_error(query: str, error: ParseError) -> HxqlError:
    detail = error.errors[0] if error.errors else {}
    line, column = detail.get("line") or 1, detail.get("col") or 0
    highlight = str(detail.get("highlight") or "")
    line_start = sum(len(text) + 1 for text in query.split("\n")[: line - 1])
    description = str(detail.get("description") or "syntax error")
    if "<class" in description:
        description = "incomplete condition"
    return HxqlError(f"{description} near '{highlight}'", line_start + column - len(highlight))


def _check_tokens(query: str, tokens: list[Token], statement: exp.Expr) -> None:
    """Refuse, at its own position, every token of the condition outside the grammar."""
    names = {n.meta.get("start") for n in statement.find_all(exp.Identifier)}
    kinds = [None, *(token.token_type for token in tokens), None]
    for index, token in enumerate(tokens):
        before, kind, after = kinds[index : index + 3]
        if (kind, after) == (TokenType.VAR, TokenType.L_PAREN):
            raise HxqlError(f"function calls are not allowed: '{token.text}'", token.start)
        if (kind, after) in _LENIENT_PAIRS and before != TokenType.IS:
            raise _unexpected(query, tokens[index + 1])
        # A keyword the parser read as a column name, such as `type` or `date`.
        keyword_name = token.start in names and token.text.isascii()
        if not _token_allowed(query, token) and not keyword_name:
            raise _unexpected(query, token)


def _token_allowed(query: str, token: Token) -> bool:
    kind = token.token_type
    if kind == TokenType.VAR:
        return bool(_UNQUOTED.fullmatch(token.text))
    if kind == TokenType.IDENTIFIER:
        return query[token.start] == '"'
    if kind == TokenType.NUMBER:
        return bool(_NUMBER.fullmatch(token.text))
    return kind in _PLAIN_TOKENS or (kind == TokenType.EQ and token.text == "=")


def _condition(node: exp.Expr) -> Q:
    handler = _HANDLERS.get(type(node))
    if handler is None:
        raise HxqlError("expected a condition", _pos(node))
    return handler(node)


def _compare(node: exp.Expr) -> Q:
    name, position = _field(node.this)
    value, value_at = _literal(node.expression), _pos(node.expression)
    lookup = _OPERATORS[type(node)]
    if name not in _FIELDS:
        q = _key_compare(name, lookup, value, value_at)
    elif lookup is not lookups.Exact and name == "sys_id":
        raise HxqlError("sys_id supports only =, !=, IN and IS NULL", position)
    else:
        column, prepared = _field_value(name, value, value_at)
        q = Q(**{f"{column}__{lookup.lookup_name}": prepared})
    return ~q if isinstance(node, exp.NEQ) else q


def _key_compare(key: str, lookup: type[lookups.Lookup[Any]], value: Scalar, position: int) -> Q:
    if lookup is lookups.Exact:
        return Q(lookups.Exact(_key(key), _json(value)))
    if isinstance(value, bool):
        raise HxqlError("TRUE and FALSE compare only with =, != and IN", position)
    # jsonb orders every string before every number: compare within the literal's type.
    kind = "string" if isinstance(value, str) else "number"
    return Q(lookup(_key(key), _json(value)), lookups.Exact(_JsonbTypeof(_key(key)), kind))


def _in(node: exp.Expr) -> Q:
    _only(node, "this", "expressions")
    name, _ = _field(node.this)
    values = [(_literal(item), _pos(item)) for item in node.expressions]
    if not values:
        raise HxqlError("IN needs at least one value", _pos(node))
    if name not in _FIELDS:
        return Q(lookups.In(_key(name), [_json(value) for value, _ in values]))
    groups: dict[str, list[Any]] = {}
    for value, position in values:
        column, prepared = _field_value(name, value, position)
        groups.setdefault(column, []).append(prepared)
    return reduce(or_, (Q(**{f"{column}__in": group}) for column, group in groups.items()))


def _like(node: exp.Expr) -> Q:
    _only(node, "this", "expression", "negate")
    name, position = _field(node.this)
    pattern = node.expression
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise HxqlError("LIKE takes a quoted pattern", _pos(pattern))
    regex = _like_regex(pattern.name, _pos(pattern))
    if name in ("sys_id", "sys_created"):
        raise HxqlError(f"{name} does not support LIKE", position)
    if name in _FIELDS:
        q = Q(**{f"{_FIELDS[name]}__regex": regex})
    else:
        q = Q(lookups.Regex(KeyTextTransform(name, "metadata"), regex))
    return ~q if node.args.get("negate") else q


def _like_regex(pattern: str, position: int) -> str:
    parts, characters = ["^"], iter(pattern)
    for character in characters:
        if character == "\\":
            character = next(characters, "")
            if not character:
                raise HxqlError("LIKE pattern ends with an escape character", position)
            parts.append(re.escape(character))
        else:
            parts.append({"%": ".*", "_": "."}.get(character) or re.escape(character))
    return "".join([*parts, "$"])


def _is(node: exp.Expr) -> Q:
    _only(node, "this", "expression", "negate")
    name, _ = _field(node.this)
    if not isinstance(node.expression, exp.Null):
        raise HxqlError("IS takes only NULL or NOT NULL", _pos(node.expression))
    is_null = not node.args.get("negate")
    if name in _FIELDS:
        return Q(**{f"{_FIELDS[name]}__isnull": is_null})
    # ->> yields SQL NULL both for a missing key and for JSON null.
    return Q(lookups.IsNull(KeyTextTransform(name, "metadata"), is_null))


def _field(node: exp.Expr) -> tuple[str, int]:
    """The field or metadata key a condition is about, and its position."""
    ident = node.this if isinstance(node, exp.Column) else None
    if not isinstance(ident, exp.Identifier):
        raise HxqlError("expected a field or metadata key", _pos(node))
    _only(node, "this")
    name, position = ident.name, _pos(ident)
    if name.startswith("sys_") and name not in _FIELDS:
        raise HxqlError(f"unknown field '{name}'", position)
    if not name or _is_integer(name):
        raise HxqlError(f"metadata key '{name}' must not be empty or an integer", position)
    return name, position


def _literal(node: exp.Expr) -> Scalar:
    number = node.this if isinstance(node, exp.Neg) else node
    if isinstance(number, exp.Literal) and not number.is_string:
        if len(number.name) > MAX_NUMBER_DIGITS:
            raise HxqlError(f"number longer than {MAX_NUMBER_DIGITS} digits", _pos(node))
        value = float(number.name) if "." in number.name else int(number.name)
        return -value if number is not node else value
    if isinstance(node, exp.Literal):
        return node.name
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Null):
        raise HxqlError("NULL is allowed only in IS [NOT] NULL", _pos(node))
    raise HxqlError("expected a literal", _pos(node))


def _field_value(name: str, value: Scalar, position: int) -> tuple[str, Any]:
    """The column or transform to compare with, and the literal converted for it."""
    if not isinstance(value, str):
        raise HxqlError(f"{name} compares only with a quoted string", position)
    if name == "sys_id":
        try:
            return "id", uuid.UUID(value)
        except ValueError:
            raise HxqlError(f"'{value}' is not a UUID", position) from None
    if name == "sys_created":
        return _moment(value, position)
    return _FIELDS[name], value


def _moment(text: str, position: int) -> tuple[str, date | datetime]:
    try:
        if _DATE.fullmatch(text):
            return "created_at__date", date.fromisoformat(text)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise HxqlError(f"'{text}' is not an ISO date or datetime", position) from None
    return "created_at", timezone.make_aware(moment) if timezone.is_naive(moment) else moment


def _is_integer(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _key(name: str) -> KeyTransform:
    return KeyTransform(name, "metadata")


def _json(value: Scalar) -> Value:
    # The lookup is built before its left side knows it is JSON: say so, or Django would
    # send 'x' where PostgreSQL expects the jsonb '"x"'.
    return Value(value, output_field=JSONField())


def _only(node: exp.Expr, *names: str) -> None:
    if any(value for key, value in node.args.items() if key not in names):
        raise HxqlError("unexpected expression", _pos(node))


def _pos(node: exp.Expr) -> int:
    return min((n.meta["start"] for n in node.walk() if "start" in n.meta), default=0)


def _unexpected(query: str, token: Token) -> HxqlError:
    return HxqlError(f"unexpected token '{query[token.start : token.end + 1]}'", token.start)


_HANDLERS: dict[type[exp.Expr], Callable[[exp.Expr], Q]] = {
    exp.Paren: lambda node: _condition(node.this),
    exp.Not: lambda node: ~_condition(node.this),
    # flatten() walks a long AND chain without recursing once per operand.
    exp.And: lambda node: reduce(and_, map(_condition, node.flatten())),
    exp.Or: lambda node: reduce(or_, map(_condition, node.flatten())),
    exp.In: _in,
    exp.Like: _like,
    exp.Is: _is,
    **dict.fromkeys(_OPERATORS, _compare),
}
