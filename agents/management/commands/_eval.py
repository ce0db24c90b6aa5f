"""`manage.py agents eval NAME@VERSION --dataset D`: an experiment for a CI pipeline, run in
the command's process, with a JUnit XML report; exit status 1 on a missed threshold
(docs/api.md#gated-aliases)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from django.core.management.base import BaseCommand, CommandError

from agentbuilder.errors import DomainError, Invalid
from agentbuilder.users import User
from agents.access.permissions import Action
from agents.evals.experiments import ExperimentSpec, experiment_start
from agents.evals.gates import gate_for
from agents.evals.runner import experiment_run_here
from agents.evals.selectors import datasets_visible, experiment_results
from agents.models import Agent, Environment, Experiment
from agents.protocols.names import agent_reference
from agents.selectors.agents import agent_get_by_name

ACTION = "eval"


def add_parser(actions: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = actions.add_parser(
        ACTION, help="run an experiment now; exit 1 when a threshold is missed"
    )
    parser.add_argument("agent", metavar="NAME@VERSION", help="calculator@5, calculator@prod")
    parser.add_argument("--dataset", help="the dataset's name (default: the gate's)")
    parser.add_argument("--revision", type=int, help="default: the dataset's current one")
    parser.add_argument("--scorers", help='JSON list, e.g. \'["exact", "contains"]\'')
    parser.add_argument("--gate", metavar="ALIAS", help="the scorers and thresholds of its gate")
    parser.add_argument(
        "--min",
        action="append",
        default=[],
        metavar="SCORER=MEAN",
        help="a threshold: the scorer's minimum mean score, 0 to 1 (repeatable)",
    )
    parser.add_argument("--repetitions", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report")
    return parser


def run(command: BaseCommand, user: User, env: Environment, options: dict[str, Any]) -> None:
    reference = agent_reference(options["agent"])
    if reference is None:
        raise CommandError(f"'{options['agent']}' is not NAME or NAME@VERSION")
    name, version = reference
    try:
        agent = agent_get_by_name(user=user, environment=env, name=name, action=Action.INVOKE)
        scorers, thresholds, dataset_name = _what(agent, options)
        dataset = datasets_visible(user, env).filter(name__iexact=dataset_name).first()
        if dataset is None:
            raise CommandError(f"no dataset '{dataset_name}' in environment '{env.name}'")
        spec = ExperimentSpec(
            version=version,
            scorers=scorers,
            revision=options["revision"],
            repetitions=options["repetitions"],
            concurrency=options["concurrency"],
        )
        experiment = experiment_start(
            user=user, agent=agent, dataset=dataset, spec=spec, dispatch=False
        )
    except Invalid as exc:
        lines = "\n".join(f"  {'.'.join(map(str, e.loc))}: {e.msg}" for e in exc.errors)
        raise CommandError(f"nothing run:\n{lines}") from None
    except DomainError as exc:
        raise CommandError(exc.detail) from None
    experiment_run_here(experiment)
    experiment.refresh_from_db()
    if options["junit"] is not None:
        options["junit"].write_bytes(junit_xml(experiment))
    summary = experiment.summary or {}
    command.stdout.write(
        f"experiment {experiment.pk}: {name}@{experiment.version.number} on "
        f"{dataset.name}@{experiment.revision}, {experiment.done}/{experiment.total} cases, "
        f"{experiment.status}"
    )
    for scorer, figures in summary.get("scorers", {}).items():
        command.stdout.write(
            f"  {scorer}: mean {figures['mean']}, pass rate {figures['passRate']} "
            f"over {figures['cases']}"
        )
    misses = _misses(experiment, thresholds)
    if misses:
        raise CommandError("thresholds missed: " + "; ".join(misses), returncode=1)


def _what(agent: Agent, options: dict[str, Any]) -> tuple[Any, dict[str, float], str]:
    """The scorers, thresholds and dataset name the options (or the gate) give."""
    thresholds: dict[str, float] = {}
    scorers: Any = None
    dataset = options["dataset"]
    if options["gate"]:
        gate = gate_for(agent, options["gate"])
        if gate is None:
            raise CommandError(f"alias '{options['gate']}' of '{agent.name}' has no gate")
        scorers, thresholds = gate.scorers, dict(gate.thresholds)
        dataset = dataset or gate.dataset.name
    if options["scorers"]:
        try:
            scorers = json.loads(options["scorers"])
        except ValueError as exc:
            raise CommandError(f"--scorers: not JSON: {exc}") from None
    for item in options["min"]:
        scorer, _, value = item.partition("=")
        try:
            thresholds[scorer] = float(value)
        except ValueError:
            raise CommandError(f"--min {item}: SCORER=MEAN, a number from 0 to 1") from None
    if scorers is None:
        raise CommandError("name the scorers (--scorers) or a gated alias (--gate)")
    if not dataset:
        raise CommandError("name the dataset (--dataset) or a gated alias (--gate)")
    return scorers, thresholds, dataset


def _misses(experiment: Experiment, thresholds: dict[str, float]) -> list[str]:
    means = (experiment.summary or {}).get("scorers", {})
    misses = []
    for scorer, minimum in thresholds.items():
        mean = means.get(scorer, {}).get("mean")
        if mean is None or mean < minimum:
            misses.append(f"{scorer} mean {mean} < {minimum}")
    if experiment.status != "completed":
        misses.append(f"the experiment ended {experiment.status}")
    return misses


def junit_xml(experiment: Experiment) -> bytes:
    """The experiment as JUnit XML: a test suite, a test case per case and repetition,
    failed with its failing scores' reasons (errored when its run did not complete)."""
    results = list(experiment_results(experiment))
    failures = sum(r.passed is False and r.error is None for r in results)
    errors = sum(r.error is not None for r in results)
    suite = ElementTree.Element(
        "testsuite",
        name=f"{experiment.agent.name}@{experiment.version.number} on {experiment.dataset.name}"
        f"@{experiment.revision}",
        tests=str(len(results)),
        failures=str(failures),
        errors=str(errors),
        time=f"{sum(r.latency_ms or 0 for r in results) / 1000:.3f}",
    )
    for result in results:
        case = ElementTree.SubElement(
            suite,
            "testcase",
            classname=f"{experiment.dataset.name}",
            name=f"case {result.position}"
            + (f" #{result.repetition + 1}" if experiment.repetitions > 1 else ""),
            time=f"{(result.latency_ms or 0) / 1000:.3f}",
        )
        failed = {n: s for n, s in (result.scores or {}).items() if not s.get("passed")}
        if result.error is not None:
            error = ElementTree.SubElement(case, "error", message=str(result.error.get("message")))
            error.text = str(result.error.get("message"))
        elif failed:
            message = "; ".join(f"{n}: {s.get('reason', '')}" for n, s in failed.items())
            failure = ElementTree.SubElement(case, "failure", message=message)
            failure.text = f"answer: {result.answer}\n{message}"
        out = ElementTree.SubElement(case, "system-out")
        out.text = json.dumps({"runId": str(result.run_id), "answer": result.answer})
    root = ElementTree.Element("testsuites")
    root.append(suite)
    return ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)
