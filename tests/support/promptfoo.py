"""Helpers for the promptfoo import's tests: import a configuration and check every case as
cases_add would, or take its one refusal, or its warnings by path."""

from __future__ import annotations

from typing import Any

import pytest

from agentbuilder.errors import Invalid
from agents.evals.cases import case_check
from agents.evals.promptfoo import PromptfooImport, promptfoo_import


def imported(config: str, agent_type: str = "tool", **options: Any) -> PromptfooImport:
    result = promptfoo_import(config, agent_type=agent_type, **options)
    for i, case in enumerate(result.cases):  # what cases_add would check
        case_check(case, agent_type=agent_type, loc=("body", i))
    return result


def refused(config: str, agent_type: str = "tool", **options: Any) -> tuple[list[Any], str]:
    with pytest.raises(Invalid) as raised:
        promptfoo_import(config, agent_type=agent_type, **options)
    [error] = raised.value.errors
    return list(error.loc), error.msg


def warnings(result: PromptfooImport) -> dict[tuple[Any, ...], str]:
    return {w.loc: w.msg for w in result.warnings}
