"""A budget's periods, in UTC: a day from midnight, a month from the 1st."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

DAY, MONTH = "day", "month"


def period_start(period: str, at: datetime | None = None) -> date:
    """The first day of the period of `period` ("day" or "month") that holds `at` (now)."""
    today = (at or datetime.now(UTC)).astimezone(UTC).date()
    return today if period == DAY else today.replace(day=1)


def period_end(period: str, start: date) -> date:
    """The first day after the period that starts on `start`."""
    if period == DAY:
        return start + timedelta(days=1)
    return (start.replace(day=28) + timedelta(days=4)).replace(day=1)
