"""A dataset's cases from an uploaded file (docs/api.md#importing-datasets): JSON Lines, a
JSON array, YAML or CSV, read into cases' wire form (agents.evals.cases).

A file is read for its shape only: whether each case fits the dataset's agent type is
agents.evals.cases.case_check's to say, and cases_from_file_checked asks it with each
case's place in the file. Errors name that place, so a person can find it in an editor or a
spreadsheet: `("file", "line", 12, ...)` in JSON Lines, JSON and YAML (the line a case
starts on), `("file", "row", 5, "<column>")` in CSV (rows as a spreadsheet numbers them:
the header is row 1).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from agentbuilder.api.parsers import MAX_DEPTH, check_json, check_text, loads_json
from agentbuilder.errors import Invalid, Loc
from agents.config_files.documents import MAX_FILE_BYTES as MAX_AGENT_FILE_BYTES
from agents.config_files.documents import FileRefused, yaml_compose, yaml_construct
from agents.evals.cases import MAX_CASES_PER_CALL, case_check
from agents.runs.request import TASK_TYPES

FILE: Loc = ("file",)
EXTENSIONS = ".jsonl, .ndjson, .json, .csv, .yaml or .yml"
# What 10,000 cases of a few KB each take.
MAX_FILE_BYTES = 32 * 1024 * 1024
# PyYAML reads a few hundred KB per second of CPU (a YAML file of 10,000 small cases, 1 MiB,
# takes seconds): YAML files are held to agent files' bound, larger sets go as JSON Lines.
MAX_YAML_BYTES = MAX_AGENT_FILE_BYTES
# As cases_add: enough errors to fix a file by; the rest are likely alike.
MAX_ERRORS = 20


@dataclass(frozen=True)
class FileCase:
    loc: Loc  # where the case is in the file: ("file", "line", 12) or ("file", "row", 5)
    case: dict[str, Any]  # its wire form


def cases_from_file(filename: str, content: bytes, *, agent_type: str) -> list[dict[str, Any]]:
    """The cases (wire form) of an uploaded dataset file, its format told by its name's
    extension. Raises Invalid at the file's line or row: not a format we read, not UTF-8,
    not well-formed, more than MAX_CASES_PER_CALL cases."""
    return [item.case for item in file_cases(filename, content, agent_type=agent_type)]


def cases_from_file_checked(
    filename: str, content: bytes, *, agent_type: str
) -> list[dict[str, Any]]:
    """As cases_from_file, each case then checked for `agent_type` (case_check) and given in
    its stored form, with errors at the case's line or row (up to MAX_ERRORS of them)."""
    stored, problems = [], []
    for item in file_cases(filename, content, agent_type=agent_type):
        try:
            stored.append(case_check(item.case, agent_type=agent_type, loc=item.loc))
        except Invalid as exc:
            problems.extend(exc.errors)
            if len(problems) >= MAX_ERRORS:
                break
    if problems:
        raise Invalid(problems)
    return stored


def file_cases(filename: str, content: bytes, *, agent_type: str) -> list[FileCase]:
    """The cases of a dataset file with their places in it; raises as cases_from_file."""
    if len(content) > MAX_FILE_BYTES:
        raise Invalid.at(
            FILE, f"{len(content):,} bytes: a dataset file is at most {MAX_FILE_BYTES:,}"
        )
    read = _READERS.get(PurePath(filename).suffix.lower())
    if read is None:
        raise Invalid.at(FILE, f"'{filename}' is not a dataset file: name it {EXTENSIONS}")
    found: list[FileCase] = []
    for item in read(file_text(content), agent_type):
        if len(found) == MAX_CASES_PER_CALL:
            raise Invalid.at(
                FILE,
                f"more than {MAX_CASES_PER_CALL:,} cases: at most {MAX_CASES_PER_CALL:,} a "
                "file; split it and upload the rest after",
            )
        found.append(item)
    if not found:
        raise Invalid.at(FILE, "no case in the file")
    return found


def file_text(content: bytes, loc: Loc = FILE) -> str:
    """An uploaded file's text: UTF-8, with or without a byte order mark, or UTF-16 with
    one (spreadsheets save "Unicode text" so). Raises Invalid at `loc` for other bytes."""
    utf16 = content.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    try:
        return content.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError as exc:
        kind = "UTF-16" if utf16 else "UTF-8"
        raise Invalid.at(
            loc, f"not {kind} text: byte {exc.start} is {content[exc.start]:#04x}"
        ) from None


# ---------------------------------------------------------------- JSON Lines, JSON, YAML


def _object(data: Any, loc: Loc) -> FileCase:
    if not isinstance(data, dict):
        raise Invalid.at(loc, 'a case is an object: {"input": ..., "expected": {...}}')
    return FileCase(loc, data)


def _jsonl(text: str, agent_type: str) -> Iterator[FileCase]:
    # Split on line feeds alone: str.splitlines also splits on U+2028 and others, which a
    # JSON string may hold as they are.
    for number, line in enumerate(text.split("\n"), 1):
        if line.strip():
            loc = (*FILE, "line", number)
            yield _object(loads_json(line, loc), loc)


_SPACE = re.compile(r"[ \t\n\r]*")


def _json_array(text: str, agent_type: str) -> Iterator[FileCase]:
    # Decoded value by value rather than at once, so each case's error names its line.
    decoder = json.JSONDecoder(parse_constant=_not_a_number)

    counted = [0, 1]  # a position, and the line it is on: counted on from there, not anew

    def line_at(position: int) -> Loc:
        if position < counted[0]:
            counted[:] = [0, 1]
        counted[1] += text.count("\n", counted[0], position)
        counted[0] = position
        return (*FILE, "line", counted[1])

    def skip(position: int) -> int:
        match = _SPACE.match(text, position)
        assert match is not None
        return match.end()

    at = skip(0)
    if not text.startswith("[", at):
        raise Invalid.at(line_at(at), "a .json dataset file is a JSON array of cases")
    at = skip(at + 1)
    if text.startswith("]", at):
        at = skip(at + 1)
    else:
        while True:
            loc = line_at(at)
            try:
                value, at = decoder.raw_decode(text, at)
            except json.JSONDecodeError as exc:
                raise Invalid.at(line_at(exc.pos), f"not valid JSON: {exc.msg}") from None
            except ValueError as exc:  # NaN, Infinity
                raise Invalid.at(loc, f"not valid JSON: {exc}") from None
            except RecursionError:
                raise Invalid.at(loc, f"JSON nested deeper than {MAX_DEPTH} levels") from None
            check_json(value, loc)
            yield _object(value, loc)
            at = skip(at)
            if text.startswith(",", at):
                at = skip(at + 1)
            elif text.startswith("]", at):
                at = skip(at + 1)
                break
            else:
                raise Invalid.at(line_at(at), "not valid JSON: expected ',' or ']'")
    if at != len(text):
        raise Invalid.at(line_at(at), "not valid JSON: extra data after the array")


def _not_a_number(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _yaml(text: str, agent_type: str) -> Iterator[FileCase]:
    if len(text) > MAX_YAML_BYTES:
        raise Invalid.at(
            FILE,
            f"a YAML dataset file is at most {MAX_YAML_BYTES:,} characters (YAML is slow to "
            "read): send larger sets as JSON Lines or CSV",
        )
    try:
        node = yaml_compose(text)
    except FileRefused as exc:
        raise yaml_refused(exc, FILE) from None
    if node is None:
        return
    if node.tag.endswith(":map"):
        keys = [(key.value, value) for key, value in node.value]
        unknown = [key for key, _ in keys if key != "cases"]
        if unknown or not keys:
            raise Invalid.at(
                (*FILE, *unknown[:1]), "a YAML dataset file is a list of cases, or {cases: [...]}"
            )
        node = keys[0][1]
    if not node.tag.endswith(":seq"):
        raise Invalid.at(FILE, "a YAML dataset file is a list of cases, or {cases: [...]}")
    for item in node.value:
        loc = (*FILE, "line", item.start_mark.line + 1)
        try:
            data = yaml_construct(item, loc)
        except FileRefused as exc:
            raise yaml_refused(exc, FILE) from None
        yield _object(data, loc)


def yaml_refused(exc: FileRefused, loc: Loc) -> Invalid:
    """A YAML text's refusal at its line under `loc`."""
    if exc.line is None:
        return Invalid.at(loc, exc.message)
    return Invalid.at((*loc, "line", exc.line), f"column {exc.column}: {exc.message}")


# ---------------------------------------------------------------- CSV

# A CSV column: the case's field it fills, and how its cell becomes that field's value.
# `inputs.<field>` and `metadata.<key>` columns name the field after the dot.
_LISTS = ("expected.contains", "expected.notContains", "expected.sourceDocIds")
_COLUMNS = (
    "input",
    "inputs",
    "expected",
    "expected.output",
    *_LISTS,
    "expected.regex",
    "expected.toolCalls",
    "expected.toolCallsOrder",
    "expected.outputSchema",
    "metadata",
)
_PREFIXES = ("inputs.", "metadata.")


def _key(name: str) -> str:
    return name.lower().replace("_", "")


_BY_KEY = {_key(name): name for name in _COLUMNS}


@dataclass(frozen=True)
class _Column:
    header: str  # as the file writes it
    name: str  # one of _COLUMNS, or a prefix of _PREFIXES followed by the field's name


def _columns(header: list[str], agent_type: str) -> list[_Column | None]:
    columns: list[_Column | None] = []
    seen: set[str] = set()
    task = agent_type in TASK_TYPES
    for cell in header:
        title = cell.strip()
        loc = (*FILE, "row", 1, title)
        if not title:
            columns.append(None)  # a blank header: its cells must be blank too
            continue
        prefix = next((p for p in _PREFIXES if title.lower().startswith(p)), None)
        if prefix is not None and len(title) > len(prefix):
            name = prefix + title[len(prefix) :]
        elif _key(title) in _BY_KEY:
            name = _BY_KEY[_key(title)]
        else:
            raise Invalid.at(
                loc,
                f"unknown column '{title}'; a dataset's columns: input (or inputs.<field> for "
                "task agents), expected, expected.contains, expected.notContains, "
                "expected.regex, expected.toolCalls, expected.toolCallsOrder, "
                "expected.outputSchema, expected.sourceDocIds, metadata.<key>",
            )
        if name in seen and name not in _LISTS:
            raise Invalid.at(loc, f"column '{title}' is there twice")
        seen.add(name)
        if task and name == "input":
            raise Invalid.at(
                loc,
                f"a {agent_type} agent's cases take inputs.<field> columns (or an `inputs` "
                "column of JSON objects), not `input`",
            )
        if not task and (name == "inputs" or name.startswith("inputs.")):
            raise Invalid.at(
                loc, f"a {agent_type} agent's case takes an `input` column: the user message"
            )
        columns.append(_Column(title, name))
    if "expected" in seen and "expected.output" in seen:
        raise Invalid.at((*FILE, "row", 1, "expected"), "both `expected` and `expected.output`")
    return columns


def _csv(text: str, agent_type: str) -> Iterator[FileCase]:
    first_line = text.split("\n", 1)[0]
    # Spreadsheets in locales whose decimal mark is a comma save CSV with semicolons, and
    # "Unicode text" with tabs.
    delimiter = max((",", ";", "\t"), key=first_line.count)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    number = 1
    try:
        header = next(reader, None)
        if header is None:
            return
        columns = _columns(header, agent_type)
        for number, row in enumerate(reader, 2):
            if any(cell.strip() for cell in row):
                loc = (*FILE, "row", number)
                yield FileCase(loc, _row_case(row, columns, agent_type, loc))
    except csv.Error as exc:
        raise Invalid.at((*FILE, "row", number + 1), f"not valid CSV: {exc}") from None


def _row_case(
    row: list[str], columns: list[_Column | None], agent_type: str, loc: Loc
) -> dict[str, Any]:
    if len(row) > len(columns) and any(cell.strip() for cell in row[len(columns) :]):
        raise Invalid.at(loc, f"{len(row)} cells, more than the header's {len(columns)} columns")
    case: dict[str, Any] = {}
    expected: dict[str, Any] = {}
    for column, cell in zip(columns, row, strict=False):
        if not cell.strip():
            continue
        if column is None:
            raise Invalid.at(loc, "a cell under a column with no name")
        at = (*loc, column.header)
        check_text(cell, at)
        _fill(case, expected, column.name, cell, agent_type, at)
    if expected:
        case["expected"] = expected
    return case


def _fill(
    case: dict[str, Any],
    expected: dict[str, Any],
    name: str,
    cell: str,
    agent_type: str,
    loc: Loc,
) -> None:
    task = agent_type in TASK_TYPES
    if name == "input":
        case["input"] = cell
    elif name == "inputs":
        # The inputs.<field> columns win over the object's fields, before it or after.
        case["input"] = {"inputs": {**_json_object(cell, loc), **_inputs(case)}}
    elif name.startswith("inputs."):
        case["input"] = {"inputs": {**_inputs(case), name[len("inputs.") :]: _scalar(cell)}}
    elif name in ("expected", "expected.output"):
        # A task's output is JSON; a chat agent's answer is text, kept as written.
        expected["output"] = _scalar(cell) if task else cell
    elif name in _LISTS:
        field = name[len("expected.") :]
        expected[field] = [*expected.get(field, []), *_bar_list(cell)]
    elif name == "expected.regex":
        expected["regex"] = cell
    elif name == "expected.toolCalls":
        expected["toolCalls"] = _tool_calls(cell, loc)
    elif name == "expected.toolCallsOrder":
        expected["toolCallsOrder"] = cell.strip()
    elif name == "expected.outputSchema":
        expected["outputSchema"] = _json_object(cell, loc)
    elif name == "metadata":
        case["metadata"] = {**_json_object(cell, loc), **case.get("metadata", {})}
    else:  # metadata.<key>
        case["metadata"] = {**case.get("metadata", {}), name[len("metadata.") :]: cell}


def _inputs(case: dict[str, Any]) -> dict[str, Any]:
    current = case.get("input")
    return dict(current["inputs"]) if isinstance(current, dict) else {}


_JSON_START = re.compile(r'\s*(?:[-\d{\["]|true\b|false\b|null\b)')


def _scalar(cell: str) -> Any:
    """A cell as a JSON value when it is one (42, true, null, {"a": 1}, "quoted"), else its
    text: spreadsheets have no types, and a task's inputs do."""
    if not _JSON_START.match(cell):
        return cell
    try:
        return json.loads(cell, parse_constant=_not_a_number)
    except (ValueError, RecursionError):
        return cell


def _json_object(cell: str, loc: Loc) -> dict[str, Any]:
    value = loads_json(cell, loc)
    if not isinstance(value, dict):
        raise Invalid.at(loc, "a JSON object")
    return value


_BAR = re.compile(r"(?<!\\)\|")


def _bar_list(cell: str) -> list[str]:
    """`a | b | c` as three strings; `\\|` is a bar within one."""
    parts = (part.replace("\\|", "|").strip() for part in _BAR.split(cell))
    return [part for part in parts if part]


def _tool_calls(cell: str, loc: Loc) -> list[Any]:
    """Tool names separated by bars, or a JSON array of names and {name, arguments}."""
    if not cell.lstrip().startswith("["):
        return [{"name": name} for name in _bar_list(cell)]
    calls = loads_json(cell, loc)
    if not isinstance(calls, list):
        raise Invalid.at(loc, 'tool names separated by |, or a JSON array: ["search", ...]')
    return [{"name": call} if isinstance(call, str) else call for call in calls]


_READERS: dict[str, Callable[[str, str], Iterator[FileCase]]] = {
    ".jsonl": _jsonl,
    ".ndjson": _jsonl,
    ".json": _json_array,
    ".csv": _csv,
    ".yaml": _yaml,
    ".yml": _yaml,
}
