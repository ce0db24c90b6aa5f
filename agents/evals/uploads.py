"""A file of cases uploaded on a dataset's admin page: read (JSONL, CSV or YAML, by
agents.evals.files), checked and added as one new revision, or refused whole with what is
wrong where (the file's case and field), for the page to show."""

from __future__ import annotations

from django.contrib import messages
from django.core.files.uploadedfile import UploadedFile

from agentbuilder.errors import DomainError, ErrorItem, Invalid
from agentbuilder.users import User
from agents.evals.files import MAX_FILE_BYTES, cases_from_file_checked
from agents.evals.services import cases_add
from agents.models import Dataset

SHOWN_ERRORS = 20  # as many as the file's check reports: enough to fix a file by


def upload_cases(
    *, user: User, dataset: Dataset, file: UploadedFile | None
) -> list[tuple[int, str]]:
    """Add the cases of `file` to `dataset` (EDIT is the caller's to check); what to tell
    the user, as (message level, text)."""
    if file is None:
        return [(messages.ERROR, "Choose a file of cases (JSONL, CSV or YAML) to upload.")]
    name = file.name or "cases"
    if file.size is not None and file.size > MAX_FILE_BYTES:  # refused before it is read
        return [(messages.ERROR, f"{name}: a dataset file is at most {MAX_FILE_BYTES:,} bytes.")]
    try:
        cases = cases_from_file_checked(name, file.read(), agent_type=dataset.agent_type)
        revision = cases_add(user=user, dataset=dataset, cases=cases, loc=("file",))
    except Invalid as exc:
        said = [(messages.ERROR, f"{name}: {_where(item)}") for item in exc.errors]
        return said[:SHOWN_ERRORS]
    except DomainError as exc:
        return [(messages.ERROR, f"{name}: {exc.detail}")]
    count = len(cases)
    return [(messages.SUCCESS, f"{count} case(s) added from {name}: revision {revision}.")]


def _where(item: ErrorItem) -> str:
    """`line 4, expected.regex: …` for ("file", "line", 4, "expected", "regex"): the place
    a person finds in an editor (a line) or a spreadsheet (a row, the header row 1)."""
    loc = list(item.loc[1:] if item.loc[:1] == ("file",) else item.loc)
    place = ""
    if len(loc) >= 2 and loc[0] in ("line", "row") and isinstance(loc[1], int):
        place, loc = f"{loc[0]} {loc[1]}", loc[2:]
    path = ".".join(map(str, loc))
    where = ", ".join(p for p in (place, path) if p)
    return f"{where}: {item.msg}" if where else item.msg
