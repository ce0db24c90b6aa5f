"""HxQL: what each query means as a Q, which rows it selects on PostgreSQL, and where a query
outside the grammar is refused."""

# The SQL-looking strings are HxQL queries for the parser to refuse, never sent as SQL.
# ruff: noqa: S608

from __future__ import annotations

import re
import uuid
from datetime import UTC, date, datetime
from typing import Any

import pytest
from django.db import connection, models
from django.db.models import JSONField, Q, Value, lookups
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.test.utils import isolate_apps

from retrieval.hxql import MAX_LENGTH, HxqlError, parse_hxql

W = "SELECT * FROM SysContent WHERE "


def where(condition: str) -> Q:
    return parse_hxql(W + condition)


def key(name: str) -> KeyTransform:
    return KeyTransform(name, "metadata")


def js(value: Any) -> Value:
    return Value(value, output_field=JSONField())


# The Q, without a database


def test_no_where_is_the_empty_filter() -> None:
    assert parse_hxql("SELECT * FROM SysContent") == Q()
    assert parse_hxql("select * from syscontent;") == Q()


def test_keywords_and_table_are_case_insensitive() -> None:
    assert parse_hxql("select * FROM sysCONTENT where sys_title = 'a'") == Q(title__exact="a")


@pytest.mark.parametrize(
    ("operator", "expected"),
    [
        ("=", Q(title__exact="a")),
        ("!=", ~Q(title__exact="a")),
        ("<>", ~Q(title__exact="a")),
        ("<", Q(title__lt="a")),
        ("<=", Q(title__lte="a")),
        (">", Q(title__gt="a")),
        (">=", Q(title__gte="a")),
    ],
)
def test_comparison_operators_on_a_document_field(operator: str, expected: Q) -> None:
    assert where(f"sys_title {operator} 'a'") == expected


def test_system_fields_map_to_document_columns() -> None:
    doc_id = uuid.uuid4()
    assert where(f"sys_id = '{doc_id}'") == Q(id__exact=doc_id)
    assert where("sys_docType = 'memo'") == Q(doc_type__exact="memo")
    assert where("sys_created >= '2024-03-01'") == Q(created_at__date__gte=date(2024, 3, 1))
    assert where("sys_created = '20240301'") == Q(created_at__date__exact=date(2024, 3, 1))
    assert where("sys_created < '2024-03-01T12:30:00+00:00'") == Q(
        created_at__lt=datetime(2024, 3, 1, 12, 30, tzinfo=UTC)
    )


def test_naive_datetime_is_read_in_the_default_time_zone() -> None:
    # TIME_ZONE is UTC in the test settings.
    assert where("sys_created > '2024-03-01 08:00'") == Q(
        created_at__gt=datetime(2024, 3, 1, 8, 0, tzinfo=UTC)
    )


def test_doubled_quote_is_a_quote() -> None:
    assert where("sys_title = 'O''Brien'") == Q(title__exact="O'Brien")
    assert where("sys_title = ''''") == Q(title__exact="'")


def test_and_binds_tighter_than_or() -> None:
    a, b, c = Q(title__exact="a"), Q(title__exact="b"), Q(title__exact="c")
    assert where("sys_title = 'a' OR sys_title = 'b' AND sys_title = 'c'") == a | (b & c)
    assert where("sys_title = 'a' AND sys_title = 'b' OR sys_title = 'c'") == (a & b) | c


def test_parentheses_override_precedence() -> None:
    a, b, c = Q(title__exact="a"), Q(title__exact="b"), Q(title__exact="c")
    assert where("(sys_title = 'a' OR sys_title = 'b') AND sys_title = 'c'") == (a | b) & c
    assert where("((sys_title = 'a'))") == a


def test_not_binds_tighter_than_and() -> None:
    a, b = Q(title__exact="a"), Q(title__exact="b")
    assert where("NOT sys_title = 'a' AND sys_title = 'b'") == ~a & b
    assert where("NOT (sys_title = 'a' AND sys_title = 'b')") == ~(a & b)
    assert where("NOT NOT sys_title = 'a'") == a


def test_in_and_not_in() -> None:
    assert where("sys_title IN ('a', 'b')") == Q(title__in=["a", "b"])
    assert where("sys_title NOT IN ('a')") == ~Q(title__in=["a"])
    assert where("sys_created IN ('2024-01-01', '2024-01-02T00:00:00Z')") == Q(
        created_at__date__in=[date(2024, 1, 1)]
    ) | Q(created_at__in=[datetime(2024, 1, 2, tzinfo=UTC)])


def test_is_null_on_a_document_field() -> None:
    assert where("sys_docType IS NULL") == Q(doc_type__isnull=True)
    assert where("sys_docType IS NOT NULL") == Q(doc_type__isnull=False)


@pytest.mark.parametrize(
    ("pattern", "regex", "matches", "misses"),
    [
        ("a%", "^a.*$", ["a", "abc"], ["ba"]),
        ("%a", "^.*a$", ["a", "ba"], ["ab"]),
        ("_b_", "^.b.$", ["abc"], ["ab", "abcd"]),
        ("a.b%", r"^a\.b.*$", ["a.b", "a.bc"], ["axb", "axbc"]),
        ("(x)+[y]?$", r"^\(x\)\+\[y\]\?\$$", ["(x)+[y]?$"], ["xy", "x"]),
        (r"50\%", "^50%$", ["50%"], ["500"]),
        (r"a\_b", "^a_b$", ["a_b"], ["axb"]),
        ("multi\nline", "^multi\\\nline$", ["multi\nline"], ["multi line"]),
    ],
)
def test_like_becomes_an_anchored_regex_with_literal_parts(
    pattern: str, regex: str, matches: list[str], misses: list[str]
) -> None:
    sql_pattern = pattern.replace("'", "''")
    assert where(f"sys_title LIKE '{sql_pattern}'") == Q(title__regex=regex)
    assert [text for text in matches + misses if re.search(regex, text)] == matches


def test_not_like_negates() -> None:
    assert where("sys_title NOT LIKE 'a%'") == ~Q(title__regex="^a.*$")


def test_metadata_keys_use_json_lookups_not_kwargs() -> None:
    assert where("author = 'ann'") == Q(lookups.Exact(key("author"), js("ann")))
    assert where("year != 2024") == ~Q(lookups.Exact(key("year"), js(2024)))
    assert where("draft = TRUE") == Q(lookups.Exact(key("draft"), js(True)))
    assert where("score = -1.5") == Q(lookups.Exact(key("score"), js(-1.5)))
    assert where("tag IN ('a', 2)") == Q(lookups.In(key("tag"), [js("a"), js(2)]))
    assert where("tag LIKE 'a%'") == Q(lookups.Regex(KeyTextTransform("tag", "metadata"), "^a.*$"))
    assert where("tag IS NULL") == Q(lookups.IsNull(KeyTextTransform("tag", "metadata"), True))


def test_metadata_ordering_checks_the_json_type() -> None:
    condition = where("year < 2024")
    lookup, type_check = condition.children
    assert lookup == lookups.LessThan(key("year"), js(2024))
    assert isinstance(type_check, lookups.Exact)
    assert type_check.rhs == "number"
    assert where("author < 'b'").children[1].rhs == "string"


def test_quoted_keys_are_taken_literally() -> None:
    # Django's kwargs would split "a__b" and read "contains" as a lookup.
    assert where('"a__b" = 1') == Q(lookups.Exact(key("a__b"), js(1)))
    assert where("contains = 1") == Q(lookups.Exact(key("contains"), js(1)))
    assert where('"odd key!" = 1') == Q(lookups.Exact(key("odd key!"), js(1)))
    assert where('"say ""hi""" = 1') == Q(lookups.Exact(key('say "hi"'), js(1)))
    assert where("\"sys_title\" = 'a'") == Q(title__exact="a")


def test_sql_keywords_work_as_metadata_keys() -> None:
    assert where("type = 'a' AND date = 'b'") == Q(
        lookups.Exact(key("type"), js("a")), lookups.Exact(key("date"), js("b"))
    )


def test_field_names_are_case_sensitive() -> None:
    assert where("SYS_TITLE = 'a'") == Q(lookups.Exact(key("SYS_TITLE"), js("a")))


def test_error_reads_message_at_position() -> None:
    with pytest.raises(HxqlError) as caught:
        parse_hxql("SELECT * FROM SysContent; DROP TABLE x")
    assert str(caught.value) == "unexpected token 'DROP' at position 26"
    assert (caught.value.message, caught.value.position) == ("unexpected token 'DROP'", 26)


# Refusals: each query, the text the position points at, and a word of the message

REFUSED_QUERIES = [
    ("SELECT id FROM SysContent", "id", "expected *"),
    ("SELECT *, id FROM SysContent", ",", "expected FROM"),
    ("SELECT DISTINCT * FROM SysContent", "DISTINCT", "expected *"),
    ("SELECT * FROM Documents WHERE a = 1", "Documents", "unknown table"),
    ("SELECT * FROM public.SysContent", "public", "unknown table"),
    ("SELECT * FROM SysContent s", "s", "unexpected token"),
    ("SELECT * FROM SysContent JOIN x ON a = b", "JOIN", "unexpected token"),
    ("SELECT * FROM SysContent, x", ",", "unexpected token"),
    ("SELECT * FROM SysContent ORDER BY sys_title", "ORDER BY", "unexpected token"),
    ("WITH x AS (SELECT 1) SELECT * FROM SysContent", "WITH", "expected SELECT"),
    ("", "", "expected SELECT"),
    ("SELECT * FROM SysContent WHERE", "", "expected a condition"),
    (W + "a = 1 ORDER BY a", "ORDER BY", "unexpected token"),
    (W + "a = 1 LIMIT 5", "LIMIT", "unexpected token"),
    (W + "a = 1 OFFSET 5", "OFFSET", "unexpected token"),
    (W + "a = 1 GROUP BY a", "GROUP BY", "unexpected token"),
    (W + "a = 1 HAVING a = 1", "HAVING", "unexpected token"),
    (W + "a = 1 UNION SELECT * FROM auth_user", "UNION", "unexpected token"),
    (W + "a IN (SELECT id FROM auth_user)", "SELECT", "unexpected token"),
    (W + "EXISTS (SELECT 1)", "EXISTS", "unexpected token"),
    (W + "pg_sleep(1) = 1", "pg_sleep", "function calls"),
    (W + "lower(sys_title) = 'a'", "lower", "function calls"),
    (W + "a = CURRENT_DATE", "CURRENT_DATE", "unexpected token"),
    (W + "a = 1; DROP TABLE x", "DROP", "unexpected token"),
    (W + "a = 1;;", ";", "unexpected token"),
    (W + "a = 1 -- note", "-- note", "comments"),
    (W + "a = 1 /* note */", "/* note */", "comments"),
    (W + "a = 1 /* open", "/* open", "unterminated"),
    (W + "a = 'open", "'open", "unterminated"),
    (W + "a = 'it''s", "'it''s", "unterminated"),
    (W + '"open = 1', '"open', "unterminated"),
    (W + "(a = 1", "1", "Expecting )"),
    (W + "a = 1 AND", "AND", "incomplete"),
    (W + "a = 1 b = 2", "b = 2", "Unexpected token"),
    (W + "a BETWEEN 1 AND 2", "BETWEEN", "unexpected token"),
    (W + "a ILIKE 'x'", "ILIKE", "unexpected token"),
    (W + "a ~ 'x'", "~", "unexpected token"),
    (W + "a LIKE 'x' ESCAPE '!'", "ESCAPE", "unexpected token"),
    (W + "a LIKE sys_title", "sys_title", "quoted pattern"),
    (W + "a LIKE 'x\\'", "'x\\'", "escape character"),
    (W + "a IS TRUE", "TRUE", "IS takes only NULL"),
    (W + "a IS DISTINCT FROM 1", "DISTINCT", "unexpected token"),
    (W + "a NOT NULL", "NULL", "unexpected token"),
    (W + "a NOT IS NULL", "IS", "unexpected token"),
    (W + "a = NULL", "NULL", "IS [NOT] NULL"),
    (W + "a IN (NULL)", "NULL", "IS [NOT] NULL"),
    (W + "a IN ()", "a IN", "at least one"),
    (W + "a IN (1,)", ")", "unexpected token"),
    (W + "a IN (1, b)", "b", "expected a literal"),
    (W + "a = 1e3", "1e3", "unexpected token"),
    (W + "a = .5", ".", "unexpected token"),
    (W + "a == 1", "==", "unexpected token"),
    (W + "a = E'x'", "E'x'", "unexpected token"),
    (W + "a = $$x$$", "$$x$$", "unexpected token"),
    (W + "a = :p", ":", "unexpected token"),
    (W + "a = ?", "?", "unexpected token"),
    (W + "a::text = 'x'", "::", "unexpected token"),
    (W + "x.y = 1", ".", "unexpected token"),
    (W + "é = 1", "é", "unexpected token"),
    (W + "a = 'x' || 'y'", "||", "unexpected token"),
    (W + "a = -'x'", "'x'", "expected a literal"),
    (W + "1 = 1", "1 = 1", "expected a field"),
    (W + "'a' = sys_title", "'a'", "expected a field"),
    (W + "sys_title = sys_docType", "sys_docType", "expected a literal"),
    (W + "(sys_title) = 'a'", "sys_title", "expected a field"),
    (W + "sys_title", "sys_title", "expected a condition"),
    (W + "sys_title = 'a' AND TRUE", "TRUE", "expected a condition"),
    (W + "sys_title = 5", "5", "quoted string"),
    (W + "sys_title IN ('a', 5)", "5", "quoted string"),
    (W + "sys_created > 5", "5", "quoted string"),
    (W + "sys_created = TRUE", "TRUE", "quoted string"),
    (W + "sys_created = 'yesterday'", "'yesterday'", "ISO date"),
    (W + "sys_created LIKE '2024%'", "sys_created", "LIKE"),
    (W + "sys_id = 'nope'", "'nope'", "not a UUID"),
    (W + "sys_id < '00000000-0000-0000-0000-000000000000'", "sys_id", "supports only"),
    (W + "sys_doctype = 'memo'", "sys_doctype", "unknown field"),
    (W + '"0" = 1', '"0"', "integer"),
    (W + '"" = 1', '""', "empty"),
    (W + "flag < TRUE", "TRUE", "TRUE and FALSE"),
    (W + "sys_title = 'x\x00'", "\x00", "NUL"),
    (W + "sys_title = ''\nAND\n(a = 1", "1", "Expecting )"),
]


@pytest.mark.parametrize(("query", "points_at", "says"), REFUSED_QUERIES)
def test_query_outside_the_grammar_is_refused_at_its_position(
    query: str, points_at: str, says: str
) -> None:
    with pytest.raises(HxqlError) as caught:
        parse_hxql(query)
    error = caught.value
    assert query[error.position :].startswith(points_at), (error, query[error.position :])
    assert says in error.message


@pytest.mark.parametrize(
    "query",
    [
        W + "sys_title = '' OR 1=1 --'",
        W + "sys_title = '' OR 1=1",
        W + "sys_title = 'x' OR 'a' = 'a'",
        "SELECT * FROM SysContent; DROP TABLE retrieval_document",
        "SELECT * FROM SysContent WHERE a = 1 UNION SELECT * FROM auth_user",
        W + "a IN (SELECT password FROM auth_user)",
        W + "pg_sleep(10) IS NULL",
        W + "sys_title = '' ; SELECT pg_sleep(10)",
    ],
)
def test_injection_attempts_are_refused(query: str) -> None:
    with pytest.raises(HxqlError):
        parse_hxql(query)


def test_overlong_and_deeply_nested_queries_are_refused() -> None:
    with pytest.raises(HxqlError, match="longer than"):
        parse_hxql(W + "a = '" + "x" * MAX_LENGTH + "'")
    with pytest.raises(HxqlError, match="nests too deeply") as caught:
        where("(" * 200 + "a = 1" + ")" * 200)
    assert caught.value.position == len(W)


def test_long_and_chain_is_fine() -> None:
    condition = where(" AND ".join(f"k{i} = {i}" for i in range(500)))
    assert len(condition.children) == 500


# Rows selected on PostgreSQL


@pytest.fixture
def doc_model(db: Any) -> type[models.Model]:
    """A table shaped like retrieval's Document, created inside the test's transaction."""
    with isolate_apps("retrieval"):

        class HxqlDoc(models.Model):
            id = models.UUIDField(primary_key=True, default=uuid.uuid4)
            title = models.CharField(max_length=200)
            doc_type = models.CharField(max_length=100, blank=True)
            created_at = models.DateTimeField()
            metadata = models.JSONField(default=dict)

            class Meta:
                app_label = "retrieval"

            def __str__(self) -> str:
                return self.title

    # The table goes away with the test's transaction.
    with connection.schema_editor() as editor:
        editor.create_model(HxqlDoc)
    return HxqlDoc


@pytest.fixture
def docs(doc_model: Any) -> dict[str, Any]:
    rows = {
        "ann": ("O'Brien", "report", datetime(2024, 1, 1, 10, 0, tzinfo=UTC)),
        "bob": ("Alpha", "memo", datetime(2024, 1, 2, 23, 30, tzinfo=UTC)),
        "empty": ("alpha beta", "report", datetime(2024, 2, 1, 0, 0, tzinfo=UTC)),
        "text": ("a.b%c", "", datetime(2023, 12, 31, 23, 59, tzinfo=UTC)),
    }
    metadata: dict[str, dict[str, Any]] = {
        "ann": {"author": "ann", "year": 2023, "score": 4.5, "draft": True, "code": "a.bc"},
        "bob": {"author": "bob", "year": 2024, "score": 10, "draft": False, "note": None},
        "empty": {},
        "text": {"author": "Ann", "year": "2024", "code": "axbc", "a__b": 1, "odd key": "x"},
    }
    metadata["ann"]["n"], metadata["bob"]["n"] = "10", 9
    return {
        name: doc_model.objects.create(
            title=title, doc_type=doc_type, created_at=created, metadata=metadata[name]
        )
        for name, (title, doc_type, created) in rows.items()
    }


def selected(docs: dict[str, Any], condition: str) -> set[str]:
    model = type(next(iter(docs.values())))
    ids = set(model.objects.filter(where(condition)).values_list("id", flat=True))
    return {name for name, doc in docs.items() if doc.id in ids}


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("author = 'ann'", {"ann"}),
        ("author != 'ann'", {"bob", "text"}),
        ("author IN ('ann', 'Ann')", {"ann", "text"}),
        ("author NOT IN ('ann')", {"bob", "text"}),
        ("author < 'b'", {"ann", "text"}),
        ("year = 2024", {"bob"}),
        ("year = '2024'", {"text"}),
        ("year = 2024.0", {"bob"}),
        ("year IN (2023, '2024')", {"ann", "text"}),
        ("year >= 2024", {"bob"}),
        ("year < 2024", {"ann"}),
        ("score > 5", {"bob"}),
        ("score <= 4.5", {"ann"}),
        ("score > -1", {"ann", "bob"}),
        ("n < 100", {"bob"}),
        ("n > '1'", {"ann"}),
        ("draft = TRUE", {"ann"}),
        ("draft = FALSE", {"bob"}),
        ("draft != TRUE", {"bob"}),
        ("code LIKE 'a.b%'", {"ann"}),
        ("code LIKE 'a_bc'", {"ann", "text"}),
        ("code NOT LIKE 'a.b%'", {"text"}),
        ("year LIKE '202_'", {"ann", "bob", "text"}),
        ("author IS NULL", {"empty"}),
        ("author IS NOT NULL", {"ann", "bob", "text"}),
        ("note IS NULL", {"ann", "bob", "empty", "text"}),
        ("note IS NOT NULL", set()),
        ('"a__b" = 1', {"text"}),
        ("\"odd key\" = 'x'", {"text"}),
        ("missing = 'x' OR NOT missing = 'x'", set()),
    ],
)
def test_metadata_condition_selects_rows(
    docs: dict[str, Any], condition: str, expected: set[str]
) -> None:
    assert selected(docs, condition) == expected


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("sys_title = 'O''Brien'", {"ann"}),
        ("sys_title LIKE 'alpha%'", {"empty"}),
        ("sys_title LIKE '%Brien'", {"ann"}),
        ("sys_title LIKE 'a.b\\%c'", {"text"}),
        ("sys_title LIKE 'a_b%'", {"text"}),
        ("sys_docType > 'n'", {"ann", "empty"}),
        ("sys_docType = 'report'", {"ann", "empty"}),
        ("sys_docType IN ('memo', '')", {"bob", "text"}),
        ("sys_created = '2024-01-02'", {"bob"}),
        ("sys_created >= '2024-01-02'", {"bob", "empty"}),
        ("sys_created < '2024-01-01'", {"text"}),
        ("sys_created <= '2024-01-01T10:00:00Z'", {"ann", "text"}),
        ("sys_created > '2024-01-02T22:30:00-02:00'", {"empty"}),
        ("sys_created IN ('2024-01-01', '2024-02-01')", {"ann", "empty"}),
        ("sys_docType = 'memo' OR sys_docType = 'report' AND author = 'ann'", {"ann", "bob"}),
        ("(sys_docType = 'memo' OR sys_docType = 'report') AND author = 'ann'", {"ann"}),
        ("NOT sys_docType = 'report' AND year IS NOT NULL", {"bob", "text"}),
        ("sys_title = 'x''; DROP TABLE retrieval_hxqldoc; --'", set()),
    ],
)
def test_document_field_condition_selects_rows(
    docs: dict[str, Any], condition: str, expected: set[str]
) -> None:
    assert selected(docs, condition) == expected


def test_sys_id_selects_by_uuid(docs: dict[str, Any]) -> None:
    ann, bob = docs["ann"].id, docs["bob"].id
    assert selected(docs, f"sys_id = '{ann}'") == {"ann"}
    assert selected(docs, f"sys_id NOT IN ('{ann}', '{bob}')") == {"empty", "text"}


def test_like_metacharacters_are_literal_on_postgresql(docs: dict[str, Any]) -> None:
    model = type(docs["ann"])
    title = "(x)+[y]?$ {2}|^*-&~#\tó\n\\."
    odd = model.objects.create(title=title, created_at=datetime(2024, 1, 1, tzinfo=UTC))
    docs = {**docs, "odd": odd}
    assert selected(docs, "sys_title LIKE '(x)+[y]?$ {2}|^*-&~#\tó\n\\\\.'") == {"odd"}
    assert selected(docs, "sys_title LIKE '(x)+[y]?$ {2}|^*-&~#\tó\n\\\\x'") == set()
    assert selected(docs, "sys_title LIKE '%[y]_$%'") == {"odd"}
    assert selected(docs, "sys_title LIKE '(x)%\\\\_'") == {"odd"}


def test_keys_and_values_reach_postgresql_as_parameters(doc_model: Any) -> None:
    condition = where("\"k'; DROP TABLE x; --\" = 'v''; DROP TABLE y; --' OR t LIKE '%'';--'")
    sql, params = doc_model.objects.filter(condition).query.sql_with_params()
    assert "DROP" not in sql
    assert "k'; DROP TABLE x; --" in params
    assert list(doc_model.objects.filter(condition)) == []
