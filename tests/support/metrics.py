"""/metrics read as a scraper reads it: the Prometheus text format parsed by prometheus_client's
own parser, each sample by its name and labels."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Scrape:
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]

    def value(self, name: str, **labels: str) -> float:
        """The sample of `name` with exactly these labels; 0 before anything counted it."""
        return self.samples.get((name, frozenset(labels.items())), 0.0)

    def buckets(self, name: str, **labels: str) -> dict[float, float]:
        """A histogram's cumulative buckets, upper bound → count."""
        found: dict[float, float] = {}
        for (sample, pairs), value in self.samples.items():
            named = dict(pairs)
            le = named.pop("le", None)
            if sample == f"{name}_bucket" and le is not None and named == labels:
                found[float(le)] = value
        return dict(sorted(found.items()))


def parsed(text: str) -> Scrape:
    return Scrape(
        {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }
    )


def gained(before: Scrape, after: Scrape, name: str, **labels: str) -> float:
    return after.value(name, **labels) - before.value(name, **labels)


def headers(token: str) -> Mapping[str, str]:
    return {"Authorization": f"Bearer {token}"}
