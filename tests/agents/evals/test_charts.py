"""Line and bar charts as SVG text (agents/evals/charts.py): well-formed, escaped, a dot or a
bar per known value, gaps for unknown ones, round axes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from agents.evals.charts import MAX_X_LABELS, Point, bar_chart, line_chart, nice_ceiling

SVG = "{http://www.w3.org/2000/svg}"


def parsed(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # noqa: S314 (our own output, parsed to check it is well-formed)


def texts(root: ET.Element, css: str) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text") if t.get("class") == css]


def test_each_known_value_is_a_dot_with_its_tooltip_and_link() -> None:
    points = [
        Point("v1", 0.5, "2026-11-28 10:00", "/e/1/"),
        Point("v2", 1.0, "2026-11-29 10:00", "/e/2/"),
    ]

    root = parsed(line_chart(points, title="Pass rate", fmt=lambda v: f"{v:.0%}", top=1.0))

    dots = list(root.iter(f"{SVG}circle"))
    assert len(dots) == 2
    tips = [dot.find(f"{SVG}title").text for dot in dots]  # type: ignore[union-attr]
    assert tips == ["v1 · 2026-11-28 10:00 · 50%", "v2 · 2026-11-29 10:00 · 100%"]
    assert [a.get("href") for a in root.iter(f"{SVG}a")] == ["/e/1/", "/e/2/"]
    assert texts(root, "chart-label") == ["v1", "v2"]
    assert texts(root, "chart-tick") == ["0%", "50%", "100%"]
    # Higher values are drawn higher: SVG's y grows downwards.
    assert float(dots[1].get("cy", 0)) < float(dots[0].get("cy", 0))


def test_labels_and_links_are_escaped() -> None:
    hostile = '<script>alert("x")</script>'
    svg = line_chart([Point(hostile, 1.0, hostile, '/e/"><script>')], title=hostile, css_class='"x')

    assert "<script>" not in svg
    root = parsed(svg)
    assert texts(root, "chart-label") == [hostile]
    assert root.find(f"{SVG}title").text == hostile  # type: ignore[union-attr]


def test_an_unknown_value_is_a_gap_in_the_line_not_a_zero() -> None:
    points = [Point("v1", 3.0), Point("v2", None), Point("v3", 4.0), Point("v4", 5.0)]

    root = parsed(line_chart(points, title="Cost"))

    assert len(list(root.iter(f"{SVG}circle"))) == 3
    path = next(root.iter(f"{SVG}path")).get("d", "")
    assert path.count("M") == 2  # the stroke starts again after the gap
    assert texts(root, "chart-label") == ["v1", "v2", "v3", "v4"]


def test_no_known_value_says_so() -> None:
    root = parsed(line_chart([Point("v1", None)], title="p95 latency"))

    assert list(root.iter(f"{SVG}circle")) == []
    assert texts(root, "chart-empty") == ["no data yet"]
    assert parsed(line_chart([], title="empty")) is not None


def test_many_points_label_every_nth_and_the_last() -> None:
    points = [Point(f"v{i}", float(i)) for i in range(1, 31)]

    root = parsed(line_chart(points, title="many"))

    labels = texts(root, "chart-label")
    assert len(labels) <= MAX_X_LABELS + 1
    assert labels[0] == "v1"
    assert labels[-1] == "v30"
    assert len(list(root.iter(f"{SVG}circle"))) == 30


@pytest.mark.parametrize(
    ("value", "ceiling"),
    [(0, 1), (0.3, 0.5), (1, 1), (1.2, 2), (2.2, 2.5), (7, 10), (340, 500), (1800, 2000)],
)
def test_the_axis_tops_at_a_round_value(value: float, ceiling: float) -> None:
    assert nice_ceiling(value) == pytest.approx(ceiling)


def test_bars_are_as_long_as_their_values_with_labels_links_and_unknown_said() -> None:
    points = [
        Point("alpha", 0.015, "2 runs", "/agents/1/"),
        Point("beta & <co>", 0.0075),
        Point("a name far longer than the column", None, "1 run"),
    ]

    root = parsed(bar_chart(points, title="Top agents", fmt=lambda v: f"${v:g}"))

    widths = [float(r.get("width", -1)) for r in root.iter(f"{SVG}rect")]
    assert widths[0] > 0
    assert widths[1] == pytest.approx(widths[0] / 2, abs=0.1)  # drawn to a tenth
    assert widths[2] == 0
    assert texts(root, "chart-value") == ["$0.015", "$0.0075", "unknown"]
    assert texts(root, "chart-label") == ["alpha", "beta & <co>", "a name far longer…"]
    assert [a.get("href") for a in root.iter(f"{SVG}a")] == ["/agents/1/"]
    tips = [g.find(f"{SVG}title").text for g in root.iter(f"{SVG}g")]  # type: ignore[union-attr]
    assert tips[2] == "a name far longer than the column · 1 run · unknown"


def test_a_bar_chart_of_nothing_says_so() -> None:
    root = parsed(bar_chart([], title="Top models"))

    assert texts(root, "chart-empty") == ["no data yet"]
    assert list(root.iter(f"{SVG}rect")) == []
