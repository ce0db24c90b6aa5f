"""Small line and bar charts as SVG text, drawn on the server
(docs/architecture.md#experiments-in-the-admin).

An agent's experiments page charts pass rate, p95 latency and cost per experiment; the usage
page (agents/admin/usage.py) cost and tokens per day, and the top agents, versions, callers
and models as bars. Drawn
here rather than by a bundled chart library: a few dozen points need no script, the page
works without JavaScript, and the chart is a string a test can parse. Points are spaced
evenly in the order they were made (an experiment a minute after another and one a week
later are both "the next one"), labelled by version; each point's tooltip says when.

Pure: no Django, no database. Every label goes in escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 340, 190
LEFT, RIGHT, TOP, BOTTOM = 50, 14, 28, 34  # the margins around the plot
MAX_X_LABELS = 10  # beyond it, every nth point is labelled (all keep their tooltip)


@dataclass(frozen=True)
class Point:
    """One experiment: `label` under its x (its version), `value` (None: not known, a gap),
    `note` in its tooltip (its created time), `href` its page."""

    label: str
    value: float | None
    note: str = ""
    href: str = ""


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k at or above `value` (a round top for the axis)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power * (1 + 1e-9):
            return step * power
    return 10 * power  # unreachable: 10 × power is at or above value


def line_chart(
    points: Sequence[Point],
    *,
    title: str,
    fmt: Callable[[float], str] = lambda v: f"{v:g}",
    top: float | None = None,
    css_class: str = "",
) -> str:
    """The SVG text of `points` as a line: y from 0 to `top` (default: a round value at or
    above the largest), 3 grid lines labelled by `fmt`, a dot per known value."""
    known = [p.value for p in points if p.value is not None]
    high = top if top is not None else nice_ceiling(max(known, default=0.0))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'class="{escape(css_class)}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text class="chart-title" x="{LEFT}" y="16">{escape(title)}</text>',
        *_grid(high, fmt),
    ]
    if not known:
        parts.append(
            f'<text class="chart-empty" x="{LEFT + _plot_width() / 2:.1f}" '
            f'y="{TOP + _plot_height() / 2:.1f}" text-anchor="middle">no data yet</text>'
        )
    else:
        parts.extend(_series(points, high, fmt))
    parts.append("</svg>")
    return "".join(parts)


def _plot_width() -> float:
    return WIDTH - LEFT - RIGHT


def _plot_height() -> float:
    return HEIGHT - TOP - BOTTOM


def _x(index: int, count: int) -> float:
    if count == 1:
        return LEFT + _plot_width() / 2
    return LEFT + _plot_width() * index / (count - 1)


def _y(value: float, high: float) -> float:
    share = min(max(value / high, 0.0), 1.0) if high > 0 else 0.0
    return TOP + _plot_height() * (1 - share)


def _grid(high: float, fmt: Callable[[float], str]) -> list[str]:
    lines = []
    for share in (0.0, 0.5, 1.0):
        y = _y(high * share, high)
        lines.append(
            f'<line class="chart-grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" '
            f'y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="chart-tick" x="{LEFT - 6}" y="{y + 4:.1f}" '
            f'text-anchor="end">{escape(fmt(high * share))}</text>'
        )
    return lines


def _series(points: Sequence[Point], high: float, fmt: Callable[[float], str]) -> list[str]:
    count = len(points)
    every = max(1, math.ceil(count / MAX_X_LABELS))
    path: list[str] = []
    dots: list[str] = []
    labels: list[str] = []
    move = True  # a gap (an unknown value) starts a new stroke
    for i, point in enumerate(points):
        x = _x(i, count)
        if i % every == 0 or i == count - 1:
            labels.append(
                f'<text class="chart-label" x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" '
                f'text-anchor="middle">{escape(point.label)}</text>'
            )
        if point.value is None:
            move = True
            continue
        y = _y(point.value, high)
        path.append(f"{'M' if move else 'L'}{x:.1f},{y:.1f}")
        move = False
        tip = " · ".join(t for t in (point.label, point.note, fmt(point.value)) if t)
        dot = (
            f'<circle class="chart-dot" cx="{x:.1f}" cy="{y:.1f}" r="3.5">'
            f"<title>{escape(tip)}</title></circle>"
        )
        if point.href:
            dot = f'<a href="{escape(point.href)}">{dot}</a>'
        dots.append(dot)
    line = f'<path class="chart-line" d="{" ".join(path)}"/>' if path else ""
    return [line, *dots, *labels]


BAR_HEIGHT, BAR_GAP, BAR_LEFT = 18, 6, 120  # a bar's row; the labels' column on its left
BAR_LABEL_CHARS = 18  # longer labels are cut (the tooltip keeps them whole)


def bar_chart(
    points: Sequence[Point],
    *,
    title: str,
    fmt: Callable[[float], str] = lambda v: f"{v:g}",
    css_class: str = "",
) -> str:
    """The SVG text of `points` as horizontal bars, in their order, from 0 to a round value
    at or above the largest; each bar labelled on its left and valued on its right. A point
    of unknown value has no bar, and says so."""
    known = [p.value for p in points if p.value is not None]
    high = nice_ceiling(max(known, default=0.0))
    height = TOP + max(len(points), 1) * (BAR_HEIGHT + BAR_GAP) + 8
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'class="{escape(css_class)}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text class="chart-title" x="8" y="16">{escape(title)}</text>',
    ]
    if not points:
        parts.append(
            f'<text class="chart-empty" x="{WIDTH / 2:.1f}" y="{TOP + 14}" '
            'text-anchor="middle">no data yet</text>'
        )
    for i, point in enumerate(points):
        parts.append(_bar(point, TOP + i * (BAR_HEIGHT + BAR_GAP), high, fmt))
    parts.append("</svg>")
    return "".join(parts)


def _bar(point: Point, y: float, high: float, fmt: Callable[[float], str]) -> str:
    room = WIDTH - BAR_LEFT - RIGHT - 60  # the value's text after the longest bar
    label = point.label if len(point.label) <= BAR_LABEL_CHARS else point.label[:17] + "…"
    shown = "unknown" if point.value is None else fmt(point.value)
    width = 0.0 if point.value is None else room * min(max(point.value / high, 0.0), 1.0)
    tip = " · ".join(t for t in (point.label, point.note, shown) if t)
    middle = y + BAR_HEIGHT / 2 + 4
    text = (
        f'<text class="chart-label" x="{BAR_LEFT - 6}" y="{middle:.1f}" '
        f'text-anchor="end">{escape(label)}</text>'
    )
    if point.href:
        text = f'<a href="{escape(point.href)}">{text}</a>'
    return (
        f'<g class="chart-bar-row"><title>{escape(tip)}</title>{text}'
        f'<rect class="chart-bar" x="{BAR_LEFT}" y="{y:.1f}" width="{width:.1f}" '
        f'height="{BAR_HEIGHT}"/>'
        f'<text class="chart-value" x="{BAR_LEFT + width + 4:.1f}" y="{middle:.1f}">'
        f"{escape(shown)}</text></g>"
    )
