"""A schedule's cron and time zone: parsed and checked once, and the ticks they name.

Celery's own crontab does the arithmetic (beat decides with it when to send a tick), so
what is accepted here is what beat can run, and the ticks counted here are the ones beat
sends. Five fields, as crontab(5) writes them; weekdays 0–6 from Sunday, or their names.
"""

from __future__ import annotations

import functools
import zoneinfo
from dataclasses import dataclass
from datetime import datetime

from celery.schedules import crontab, crontab_parser
from django_celery_beat.tzcrontab import TzAwareCrontab

from agentbuilder.errors import Invalid, Loc

FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
# The values each field may take, as Celery's parser bounds them (max, min).
_BOUNDS = {
    "minute": (60, 0),
    "hour": (24, 0),
    "day_of_month": (31, 1),
    "month_of_year": (12, 1),
    "day_of_week": (7, 0),
}
_NAMES = {
    "minute": "minute",
    "hour": "hour",
    "day_of_month": "day of month",
    "month_of_year": "month",
    "day_of_week": "day of week",
}


@dataclass(frozen=True)
class Cron:
    """A cron in its time zone, as beat's CrontabSchedule row holds it."""

    minute: str
    hour: str
    day_of_month: str
    month_of_year: str
    day_of_week: str
    timezone: str

    def crontab(self, now: datetime | None = None) -> crontab:
        """Celery's crontab of this cron in its zone, as beat runs it; `now`: the instant
        it counts from (None: the clock's)."""
        fields = {name: getattr(self, name) for name in FIELDS}
        tab = TzAwareCrontab(**fields, tz=self.zone)
        if now is not None:
            tab.nowfun = lambda: now.astimezone(self.zone)
        return tab

    def next_tick(self, after: datetime, now: datetime) -> datetime:
        """The first tick after `after` (counted at `now`)."""
        return now + self.crontab(now).remaining_estimate(after.astimezone(self.zone))

    @property
    def zone(self) -> zoneinfo.ZoneInfo:
        return zoneinfo.ZoneInfo(self.timezone)


def cron_parse(
    expression: str,
    timezone: str,
    *,
    cron_loc: Loc = ("body", "cron"),
    timezone_loc: Loc = ("body", "timezone"),
) -> Cron:
    """The cron `expression` ("0 9 * * mon-fri") in `timezone` (an IANA name). Raises
    Invalid at `cron_loc` or `timezone_loc`."""
    if timezone not in _zones():
        raise Invalid.at(
            timezone_loc,
            f"unknown time zone '{timezone}': an IANA name such as 'Europe/Paris' or 'UTC'",
        )
    parts = expression.split()
    if len(parts) != len(FIELDS):
        raise Invalid.at(
            cron_loc, "five fields: minute hour day-of-month month day-of-week ('0 9 * * 1-5')"
        )
    fields = dict(zip(FIELDS, parts, strict=True))
    for name, value in fields.items():
        try:
            crontab_parser(*_BOUNDS[name]).parse(value)
        except (ValueError, crontab_parser.ParseException) as exc:
            raise Invalid.at(cron_loc, f"{_NAMES[name]} '{value}': {exc}") from None
    try:
        crontab(**fields)  # what no field alone says: 31 February never comes
    except ValueError as exc:
        raise Invalid.at(cron_loc, str(exc)) from None
    return Cron(**fields, timezone=timezone)


@functools.cache
def _zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())
