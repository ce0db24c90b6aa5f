"""A promptfoo configuration read: its tests as a dataset's cases, its assertions through
agents.evals.promptfoo.assertions, its scorers through agents.evals.promptfoo.scorers.

promptfoo runs every prompt of a configuration against every provider; here the agent's
version is both, so a test becomes a case: its `vars` a task agent's `inputs`, or, for a
tool or RAG agent, the message promptfoo would have sent (the first prompt rendered with
them, or one var named by `input_var`). Its assertions become the case's `expected`
fields and the scorers that read them. What nothing of ours expresses (code, embeddings,
model-graded kinds other than `llm-rubric`, negations with no counterpart) is left out
with a warning at its path rather than refused: a team moving here keeps what carries over
and sees what it must redo. What is malformed, or read from a file (`file://…`: the import
reads nothing but the configuration), is refused at its path.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import jinja2

from agentbuilder.errors import ErrorItem, Invalid, Loc
from agents.config_files.documents import FileRefused, yaml_load
from agents.evals.cases import MAX_CASES_PER_CALL
from agents.evals.files import MAX_YAML_BYTES, file_text, yaml_refused
from agents.evals.promptfoo.assertions import Assertion, CaseExpectation, apply
from agents.evals.promptfoo.scorers import SCORER_ORDER
from agents.runs.request import TASK_TYPES
from agents.templating import TemplateLimitError, render, template_limits

ROOT: Loc = ("config",)
# promptfoo's prompt when a configuration names none.
DEFAULT_PROMPT = "{{prompt}}"
_FILE_PREFIXES = ("file://", "exec:", "package:", "langfuse://", "portkey://", "helicone://")
_FILE_SUFFIXES = (".txt", ".md", ".j2", ".json", ".jsonl", ".yaml", ".yml", ".csv", ".py", ".js")


@dataclass(frozen=True)
class PromptfooImport:
    cases: list[dict[str, Any]]  # wire form, for agents.evals.services.cases_add
    scorers: list[dict[str, Any]]  # as POST /v1/experiments takes them
    warnings: list[ErrorItem] = field(default_factory=list)  # what was left out, and where
    locs: list[Loc] = field(default_factory=list)  # each case's test in the configuration


def promptfoo_import(
    config: bytes | str,
    *,
    agent_type: str,
    judge_model: str | None = None,
    input_var: str | None = None,
) -> PromptfooImport:
    """The cases and scorers of a promptfoo configuration (YAML or JSON) for a dataset of
    `agent_type`. `judge_model` (a catalog model id) grades `llm-rubric` assertions instead
    of the configuration's grader; `input_var` names the var holding a tool or RAG agent's
    user message instead of the rendered prompt. Raises Invalid at the configuration's path
    (`("config", "tests", 3, "assert", 0, "value")`)."""
    data = _config(config)
    run = _Import(agent_type, judge_model, input_var, _prompt(data, agent_type, input_var))
    default = _default_test(data.get("defaultTest"))
    tests = data.get("tests")
    if isinstance(tests, str) or not isinstance(tests, list) or not tests:
        raise Invalid.at(
            (*ROOT, "tests"),
            "a list of tests (vars and assert); tests read from files (`file://…`, CSV, "
            "JSON Lines) are not: paste them into the configuration",
        )
    for index, test in enumerate(tests):
        run.test(test, default, (*ROOT, "tests", index))
    if "scenarios" in data:
        run.warn((*ROOT, "scenarios"), "not imported: add a scenario's tests to `tests`")
    return run.result()


def _config(config: bytes | str) -> dict[str, Any]:
    text = config if isinstance(config, str) else file_text(config, ROOT)
    if len(text) > MAX_YAML_BYTES:
        raise Invalid.at(ROOT, f"a configuration is at most {MAX_YAML_BYTES:,} characters")
    try:
        data = yaml_load(text)
    except FileRefused as exc:
        raise yaml_refused(exc, ROOT) from None
    if not isinstance(data, dict):
        raise Invalid.at(ROOT, "a promptfoo configuration: a mapping of prompts, tests, …")
    return data


def _default_test(default: Any) -> dict[str, Any]:
    loc = (*ROOT, "defaultTest")
    if default is None:
        return {}
    if not isinstance(default, dict):
        raise Invalid.at(loc, "an object (a defaultTest read from a file is not imported)")
    return default


def _prompt(data: dict[str, Any], agent_type: str, input_var: str | None) -> tuple[str, Loc]:
    """The first prompt, inline, with its path; promptfoo's default without one."""
    loc: Loc = (*ROOT, "prompts")
    prompts = data.get("prompts")
    if agent_type in TASK_TYPES or input_var is not None or not prompts:
        return DEFAULT_PROMPT, loc
    first = prompts
    if isinstance(prompts, list):
        first, loc = prompts[0], (*loc, 0)
    if isinstance(first, dict):
        first = first.get("raw", first.get("id"))
    if not isinstance(first, str):
        raise Invalid.at(loc, "a prompt: text with {{vars}}, or {raw, label}")
    if first.startswith(_FILE_PREFIXES) or (
        "\n" not in first and " " not in first and first.endswith(_FILE_SUFFIXES)
    ):
        raise Invalid.at(
            loc,
            f"'{first[:200]}' is a prompt kept elsewhere, which the import does not read: "
            "paste it inline, or name the var holding the user message (input_var)",
        )
    return first, loc


@dataclass
class _Import:
    agent_type: str
    judge_model: str | None
    input_var: str | None
    prompt: tuple[str, Loc]
    cases: list[dict[str, Any]] = field(default_factory=list)
    locs: list[Loc] = field(default_factory=list)
    expectations: list[CaseExpectation] = field(default_factory=list)
    warnings: dict[Loc, ErrorItem] = field(default_factory=dict)

    def warn(self, loc: Loc, message: str, kind: str = "not_imported") -> None:
        # A defaultTest's assertion is every test's: its warning is said once.
        self.warnings.setdefault(loc, ErrorItem(loc, message, kind))

    def test(self, test: Any, default: dict[str, Any], loc: Loc) -> None:
        if not isinstance(test, dict) or "path" in test:
            raise Invalid.at(
                loc, "a test: {description, vars, assert} (tests read from files are not)"
            )
        options = {**_mapping(default, "options", ROOT), **_mapping(test, "options", loc)}
        variables = {**_mapping(default, "vars", ROOT), **_mapping(test, "vars", loc)}
        for name, value in variables.items():
            if isinstance(value, str) and value.startswith("file://"):
                raise Invalid.at(
                    (*loc, "vars", name),
                    "a var read from a file is not imported: write its value in the test",
                )
        assertions = _assertions(test, loc)
        if not options.get("disableDefaultAsserts"):
            assertions = _assertions(default, (*ROOT, "defaultTest")) + assertions
        for key in ("transform", "transformVars"):
            if key in options:
                self.warn((*loc, "options", key), "not imported: it runs code on the output")
        if "threshold" in test:
            self.warn((*loc, "threshold"), "not imported: each scorer passes or fails a case")
        metadata = {**_mapping(default, "metadata", ROOT), **_mapping(test, "metadata", loc)}
        if isinstance(test.get("description"), str):
            metadata["description"] = test["description"]
        for combination in _combinations(variables):
            if len(self.cases) == MAX_CASES_PER_CALL:
                raise Invalid.at(
                    (*ROOT, "tests"),
                    f"more than {MAX_CASES_PER_CALL:,} cases (a var's list makes a case of "
                    "each of its values): import the tests in parts",
                )
            self._case(combination, assertions, options, metadata, loc)

    def _case(
        self,
        variables: dict[str, Any],
        assertions: list[Assertion],
        options: dict[str, Any],
        metadata: dict[str, Any],
        loc: Loc,
    ) -> None:
        expectation = CaseExpectation(self.agent_type)
        for assertion in assertions:
            rendered = _rendered(assertion.value, variables, (*assertion.loc, "value"))
            grader = assertion.data.get("provider", options.get("provider"))
            apply(expectation, assertion, rendered, grader, self.warn)
        case: dict[str, Any] = {"input": self._input(variables, options, loc)}
        if expectation.expected:
            case["expected"] = expectation.expected
        meta = dict(metadata)
        if self.agent_type not in TASK_TYPES and variables:
            meta["vars"] = variables
        if meta:
            case["metadata"] = meta
        self.cases.append(case)
        self.locs.append(loc)
        self.expectations.append(expectation)

    def _input(self, variables: dict[str, Any], options: dict[str, Any], loc: Loc) -> Any:
        if self.agent_type in TASK_TYPES:
            return {"inputs": variables}
        if self.input_var is not None:
            if self.input_var not in variables:
                raise Invalid.at((*loc, "vars"), f"no var '{self.input_var}' (input_var)")
            value = variables[self.input_var]
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        source, at = self.prompt
        if source == DEFAULT_PROMPT and "prompt" not in variables:
            raise Invalid.at(
                (*loc, "vars"),
                "no `prompts` to render and no var `prompt`: name the var holding the user "
                "message (input_var)",
            )
        text = _render(source, variables, at, (*loc, "vars"))
        prefix, suffix = options.get("prefix", ""), options.get("suffix", "")
        if isinstance(prefix, str) and isinstance(suffix, str):
            text = prefix + text + suffix
        return {"messages": _messages(text)}

    def result(self) -> PromptfooImport:
        scorers: dict[str, dict[str, Any]] = {}
        for scorer in SCORER_ORDER:
            spec = scorer.spec(self.expectations, self.judge_model, self.warn)
            if spec is not None:
                scorers[spec["name"]] = spec
        warnings = list(self.warnings.values())
        return PromptfooImport(self.cases, list(scorers.values()), warnings, self.locs)


def _mapping(test: dict[str, Any], key: str, loc: Loc) -> dict[str, Any]:
    value = test.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Invalid.at((*loc, key), "an object (one read from a file is not imported)")
    return value


def _assertions(test: dict[str, Any], loc: Loc) -> list[Assertion]:
    items = test.get("assert")
    if items is None:
        return []
    if not isinstance(items, list):
        raise Invalid.at((*loc, "assert"), "a list of assertions: [{type, value}, …]")
    return [Assertion.of(item, (*loc, "assert", i)) for i, item in enumerate(items)]


def _combinations(variables: dict[str, Any]) -> list[dict[str, Any]]:
    """As promptfoo: a var whose value is a list of strings makes a test of each string
    (every combination, with several such vars); other lists are values."""
    choices = [
        [(name, v) for v in value]
        if isinstance(value, list) and value and isinstance(value[0], str)
        else [(name, value)]
        for name, value in variables.items()
    ]
    combinations = []
    for combination in itertools.product(*choices):
        combinations.append(dict(combination))
        if len(combinations) > MAX_CASES_PER_CALL:
            break
    return combinations


def _render(source: str, variables: dict[str, Any], loc: Loc, vars_loc: Loc) -> str:
    """promptfoo's Nunjucks, as the sandboxed Jinja of task prompts (agents.templating)."""
    try:
        return render(source, variables, template_limits())
    except jinja2.UndefinedError as exc:
        where = ".".join(map(str, loc))
        raise Invalid.at(vars_loc, f"the template at {where} uses a var not set: {exc}") from None
    except (jinja2.TemplateError, TemplateLimitError, ArithmeticError, TypeError) as exc:
        raise Invalid.at(loc, f"not a template we render: {exc}") from None


def _rendered(value: Any, variables: dict[str, Any], loc: Loc) -> Any:
    if isinstance(value, str) and ("{{" in value or "{%" in value):
        return _render(value, variables, loc, loc)
    return value


def _messages(text: str) -> list[dict[str, Any]]:
    """A rendered chat prompt (a JSON list of messages) as its messages; other text as the
    one user message, as promptfoo sends it."""
    if text.lstrip().startswith("["):
        try:
            messages = json.loads(text)
        except ValueError:
            messages = None
        if isinstance(messages, list) and all(
            isinstance(m, dict) and "role" in m and "content" in m for m in messages
        ):
            return [{"role": m["role"], "content": m["content"]} for m in messages]
    return [{"role": "user", "content": text}]
