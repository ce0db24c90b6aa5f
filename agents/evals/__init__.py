"""Evaluations (docs/api.md#evaluations): datasets of cases, experiments that run a version
on them through the run path and score the runs, and aliases gated on the scores."""
