"""Dataset files (docs/api.md#importing-datasets): each format read into cases' wire form,
and each bad file refused at its line or row."""

from __future__ import annotations

import codecs
import json
from typing import Any

import pytest

from agentbuilder.errors import Invalid
from agents.evals.cases import MAX_CASES_PER_CALL
from agents.evals.files import (
    MAX_FILE_BYTES,
    MAX_YAML_BYTES,
    cases_from_file,
    cases_from_file_checked,
)


def refused(filename: str, content: bytes | str, agent_type: str = "tool") -> list[Any]:
    """The located errors of a refused file, as the API returns them."""
    raw = content.encode() if isinstance(content, str) else content
    with pytest.raises(Invalid) as raised:
        cases_from_file_checked(filename, raw, agent_type=agent_type)
    return [(list(e.loc), e.msg) for e in raised.value.errors]


CASES = [
    {"input": "What is 2+2?", "expected": {"output": "4"}},
    {
        "input": {"messages": [{"role": "user", "content": "Weather in Paris?"}]},
        "expected": {"contains": ["Paris"], "toolCalls": [{"name": "weather"}]},
        "metadata": {"topic": "weather"},
    },
]


# ---------------------------------------------------------------- JSON Lines, JSON, YAML


def test_jsonl_reads_one_case_a_line_skipping_blank_lines() -> None:
    text = "\n".join(json.dumps(c) for c in CASES) + "\n\n"
    assert cases_from_file("cases.jsonl", text.encode(), agent_type="tool") == CASES
    assert cases_from_file("cases.NDJSON", text.encode(), agent_type="tool") == CASES


def test_a_byte_order_mark_and_crlf_lines_are_read() -> None:
    text = "\r\n".join(json.dumps(c) for c in CASES)
    assert cases_from_file("c.jsonl", codecs.BOM_UTF8 + text.encode(), agent_type="tool") == CASES


def test_utf16_with_its_mark_is_read() -> None:
    text = "input,expected\nBonjour ?,Salut\n"
    cases = cases_from_file("c.csv", text.encode("utf-16"), agent_type="tool")
    assert cases == [{"input": "Bonjour ?", "expected": {"output": "Salut"}}]


def test_a_line_separator_inside_a_json_string_stays_in_its_case() -> None:
    line = json.dumps({"input": "a\u2028b"}, ensure_ascii=False)
    assert cases_from_file("c.jsonl", line.encode(), agent_type="rag") == [{"input": "a\u2028b"}]


def test_jsonl_errors_name_the_line() -> None:
    text = f'{json.dumps(CASES[0])}\n\n{{"input": "x",}}\n'
    [(loc, msg)] = refused("cases.jsonl", text)
    assert loc == ["file", "line", 3]
    assert msg.startswith("not valid JSON")
    assert refused("cases.jsonl", '{"input": "x"}\n[1, 2]\n') == [
        (["file", "line", 2], 'a case is an object: {"input": ..., "expected": {...}}')
    ]
    assert refused("cases.jsonl", '{"input": NaN}')[0][0] == ["file", "line", 1]


def test_case_check_errors_name_the_line_of_their_case() -> None:
    text = '{"input": "ok"}\n{"input": "x", "expected": {"regex": "(a"}}\n{"inputs": {}}\n'
    errors = refused("cases.jsonl", text)
    assert errors[0][0] == ["file", "line", 2, "expected", "regex"]
    assert errors[1][0] == ["file", "line", 3, "input"]


def test_a_json_array_names_the_line_each_case_starts_on() -> None:
    text = json.dumps(CASES, indent=2)
    assert cases_from_file("cases.json", text.encode(), agent_type="tool") == CASES
    broken = '[\n  {"input": "a"},\n  {"input": "b",\n   "expected": {"regex": "("}}\n]'
    assert refused("cases.json", broken)[0][0] == ["file", "line", 3, "expected", "regex"]
    assert refused("cases.json", '{"cases": []}')[0] == (
        ["file", "line", 1],
        "a .json dataset file is a JSON array of cases",
    )
    assert refused("cases.json", '[{"input": "a"}\n{"input": "b"}]')[0] == (
        ["file", "line", 2],
        "not valid JSON: expected ',' or ']'",
    )
    assert refused("cases.json", '[{"input": "a"}] x')[0][1].endswith("extra data after the array")


def test_yaml_reads_a_list_or_a_cases_key() -> None:
    text = """
- input: What is 2+2?
  expected:
    output: "4"
- input:
    messages:
      - role: user
        content: Weather in Paris?
  expected:
    contains: [Paris]
    toolCalls:
      - name: weather
  metadata:
    topic: weather
"""
    assert cases_from_file("cases.yaml", text.encode(), agent_type="tool") == CASES
    keyed = "cases:\n" + "\n".join("  " + line for line in text.splitlines())
    assert cases_from_file("cases.yml", keyed.encode(), agent_type="tool") == CASES


def test_yaml_errors_name_the_line_of_their_case() -> None:
    text = "- input: a\n- input: b\n  expected:\n    regex: '(b'\n"
    assert refused("cases.yaml", text)[0][0] == ["file", "line", 2, "expected", "regex"]
    assert refused("cases.yaml", "name: x\ncases: []\n")[0][0] == ["file", "name"]
    [(loc, msg)] = refused("cases.yaml", "- a: &x 1\n- b: *x\n")
    assert loc == ["file", "line", 1]
    assert msg.startswith("column 6: anchors and aliases (&x, *x) are not accepted")
    [(loc, msg)] = refused("cases.yaml", "- input: a\n- !!python/object:os.system x\n")
    assert loc == ["file", "line", 2]
    assert "could not determine a constructor" in msg
    assert refused("cases.yaml", "- just text\n")[0][0] == ["file", "line", 1]


# ---------------------------------------------------------------- CSV


def test_csv_for_a_chat_agent() -> None:
    text = (
        "input,expected,expected.contains,expected.notContains,expected.regex,"
        "expected.toolCalls,metadata.topic\n"
        "What is 2+2?,4,4 | four,five,\\d,,math\n"
        '"Weather in ""Paris""?",,Paris,,,weather|forecast,weather\n'
    )
    assert cases_from_file("cases.csv", text.encode(), agent_type="tool") == [
        {
            "input": "What is 2+2?",
            "expected": {
                "output": "4",
                "contains": ["4", "four"],
                "notContains": ["five"],
                "regex": "\\d",
            },
            "metadata": {"topic": "math"},
        },
        {
            "input": 'Weather in "Paris"?',
            "expected": {
                "contains": ["Paris"],
                "toolCalls": [{"name": "weather"}, {"name": "forecast"}],
            },
            "metadata": {"topic": "weather"},
        },
    ]


def test_csv_lists_take_escaped_bars_repeated_columns_and_json_tool_calls() -> None:
    text = (
        "input,expected.contains,Expected.Contains,expected.tool_calls,expected.toolCallsOrder\n"
        'hi,a\\|b | c,d,"[""search"", {""name"": ""fetch"", ""arguments"": {""id"": 1}}]",exact\n'
    )
    [case] = cases_from_file("c.csv", text.encode(), agent_type="tool")
    assert case["expected"] == {
        "contains": ["a|b", "c", "d"],
        "toolCalls": [{"name": "search"}, {"name": "fetch", "arguments": {"id": 1}}],
        "toolCallsOrder": "exact",
    }


def test_csv_for_a_task_agent_types_json_cells_and_keeps_text() -> None:
    text = (
        "inputs.city,inputs.days,inputs.metric,inputs.zip,inputs.tags,expected.output\n"
        'Paris,3,true,"""02134""","[""a""]","{""ok"": true}"\n'
        "Oslo,,false,02134,[not json,done\n"
    )
    assert cases_from_file("c.csv", text.encode(), agent_type="task") == [
        {
            "input": {
                "inputs": {
                    "city": "Paris",
                    "days": 3,
                    "metric": True,
                    "zip": "02134",
                    "tags": ["a"],
                }
            },
            "expected": {"output": {"ok": True}},
        },
        {
            "input": {
                "inputs": {"city": "Oslo", "metric": False, "zip": "02134", "tags": "[not json"}
            },
            "expected": {"output": "done"},
        },
    ]


def test_csv_inputs_column_of_objects_merges_with_field_columns() -> None:
    text = 'inputs.b,inputs\n2,"{""a"": 1, ""b"": 9}"\n'
    [case] = cases_from_file("c.csv", text.encode(), agent_type="task")
    assert case == {"input": {"inputs": {"a": 1, "b": 2}}}


def test_csv_semicolons_tabs_blank_rows_and_cells_spanning_lines() -> None:
    text = 'input;expected\n"line one\nline two";ok\n;\n\nnext;\n'
    assert cases_from_file("c.csv", text.encode(), agent_type="rag") == [
        {"input": "line one\nline two", "expected": {"output": "ok"}},
        {"input": "next"},
    ]
    tabbed = "input\texpected\nhi\tthere\n"
    assert cases_from_file("c.csv", tabbed.encode(), agent_type="rag") == [
        {"input": "hi", "expected": {"output": "there"}}
    ]


def test_csv_errors_name_the_row_and_column() -> None:
    assert refused("c.csv", "input,answer\nhi,there\n")[0][0] == ["file", "row", 1, "answer"]
    assert refused("c.csv", "input,input\na,b\n")[0] == (
        ["file", "row", 1, "input"],
        "column 'input' is there twice",
    )
    assert refused("c.csv", "input,expected\nhi,ok\nhi,ok,extra\n")[0] == (
        ["file", "row", 3],
        "3 cells, more than the header's 2 columns",
    )
    not_json = 'input,expected.outputSchema\nhi,"{""type"": 3}"\nhi,{\n'
    [(loc, msg)] = refused("c.csv", not_json)  # a file's form: its first error
    assert loc == ["file", "row", 3, "expected.outputSchema"]
    assert msg.startswith("not valid JSON")
    not_schemas = 'input,expected.outputSchema\nhi,"{""type"": 3}"\nhi,"{""type"": 4}"\n'
    errors = refused("c.csv", not_schemas)  # cases' checks: every case's errors
    assert [e[0][:5] for e in errors] == [
        ["file", "row", 2, "expected", "outputSchema"],
        ["file", "row", 3, "expected", "outputSchema"],
    ]
    assert refused("c.csv", "input,metadata\nhi,[1]\n")[0] == (
        ["file", "row", 2, "metadata"],
        "a JSON object",
    )
    assert refused("c.csv", "input\n\x00\n")[0][0] == ["file", "row", 2, "input"]


def test_csv_columns_must_fit_the_agent_type() -> None:
    [(loc, msg)] = refused("c.csv", "input,expected\nhi,ok\n", agent_type="task")
    assert loc == ["file", "row", 1, "input"]
    assert "inputs.<field>" in msg
    [(loc, msg)] = refused("c.csv", "inputs.city\nParis\n", agent_type="rag")
    assert loc == ["file", "row", 1, "inputs.city"]
    assert "`input` column" in msg


# ---------------------------------------------------------------- any file


def test_a_file_of_another_kind_is_refused_by_its_name() -> None:
    [(loc, msg)] = refused("cases.xlsx", b"PK\x03\x04")
    assert loc == ["file"]
    assert ".jsonl" in msg
    assert ".csv" in msg


def test_undecodable_bytes_are_refused_naming_the_byte() -> None:
    assert refused("c.csv", b"input\nol\xe9\n") == [
        (["file"], "not UTF-8 text: byte 8 is 0xe9"),
    ]


def test_an_empty_file_is_refused() -> None:
    for name, content in [
        ("c.jsonl", "\n\n"),
        ("c.csv", "input\n"),
        ("c.yaml", ""),
        ("c.json", "[]"),
    ]:
        assert refused(name, content) == [(["file"], "no case in the file")]


def test_10001_cases_are_refused_and_10000_read() -> None:
    header = "input\n"
    rows = "q\n" * MAX_CASES_PER_CALL
    assert len(cases_from_file("c.csv", (header + rows).encode(), agent_type="tool")) == 10_000
    [(loc, msg)] = refused("c.csv", header + rows + "q\n")
    assert loc == ["file"]
    assert msg.startswith("more than 10,000 cases")
    lines = '{"input": "q"}\n' * (MAX_CASES_PER_CALL + 1)
    assert refused("c.jsonl", lines)[0][1].startswith("more than 10,000 cases")


def test_a_file_past_the_size_bound_is_refused_unread() -> None:
    [(loc, msg)] = refused("c.jsonl", b" " * (MAX_FILE_BYTES + 1))
    assert loc == ["file"]
    assert "at most" in msg


def test_checked_cases_are_in_their_stored_form() -> None:
    stored = cases_from_file_checked("c.csv", b"input,expected\nhi,there\n", agent_type="tool")
    assert stored == [
        {
            "input": {"messages": [{"role": "user", "content": "hi"}]},
            "expected": {"output": "there"},
        }
    ]


def test_a_yaml_file_is_held_to_agent_files_bound() -> None:
    text = "- input: " + "x" * MAX_YAML_BYTES + "\n"
    [(loc, msg)] = refused("c.yaml", text)
    assert loc == ["file"]
    assert "send larger sets as JSON Lines or CSV" in msg
    # The same cases, as JSON Lines, are read.
    line = '{"input": "' + "x" * MAX_YAML_BYTES + '"}'
    assert len(cases_from_file("c.jsonl", line.encode(), agent_type="tool")) == 1
