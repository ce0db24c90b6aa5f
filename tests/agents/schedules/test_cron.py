"""A schedule's cron and time zone (agents/schedules/cron.py): what parses, where a refusal
points, and the ticks counted in the schedule's zone as beat counts them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentbuilder.errors import Invalid
from agents.schedules.cron import cron_parse


def at(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    "expression", ["* * * * *", "*/5 * * * *", "0 9 * * mon-fri", "0 0 29 2 *", "0,30 8-18 1 * 0"]
)
def test_crons_beat_runs_parse(expression: str) -> None:
    cron = cron_parse(expression, "UTC")

    assert " ".join(
        (cron.minute, cron.hour, cron.day_of_month, cron.month_of_year, cron.day_of_week)
    ) == " ".join(expression.split())


@pytest.mark.parametrize(
    ("expression", "said"),
    [
        ("0 9 * *", "five fields"),
        ("61 * * * *", "minute '61'"),
        ("0 24 * * *", "hour '24'"),
        ("0 9 0 * *", "day of month '0'"),
        ("0 9 * 13 *", "month '13'"),
        ("0 9 * * 8", "day of week '8'"),
        ("0 9 31 2 *", "never occurs"),
    ],
)
def test_a_bad_cron_is_refused_at_its_location_saying_which_field(
    expression: str, said: str
) -> None:
    with pytest.raises(Invalid) as refused:
        cron_parse(expression, "UTC", cron_loc=("x", "cron"))

    [error] = refused.value.errors
    assert error.loc == ("x", "cron")
    assert said in error.msg


def test_an_unknown_zone_is_refused_at_its_location() -> None:
    with pytest.raises(Invalid) as refused:
        cron_parse("0 9 * * *", "Europe/Atlantis")

    assert [e.loc for e in refused.value.errors] == [("body", "timezone")]


def test_ticks_are_counted_in_the_schedules_zone() -> None:
    weekdays_at_nine = cron_parse("0 9 * * mon-fri", "Europe/Paris")
    friday_nine_paris = at(2026, 3, 20, 8)  # UTC+1 then

    # The next is Monday 09:00 in Paris: UTC+1 still on the 23rd.
    assert weekdays_at_nine.next_tick(friday_nine_paris, now=friday_nine_paris) == at(
        2026, 3, 23, 8
    )
    # After the change to summer time (29 March) 09:00 in Paris is 07:00 UTC.
    saturday = at(2026, 3, 28, 8)
    assert weekdays_at_nine.next_tick(saturday, now=saturday) == at(2026, 3, 30, 7)


def test_the_next_tick_after_a_long_gap_is_the_first_missed_one() -> None:
    hourly = cron_parse("0 * * * *", "UTC")

    # Counted at 10:30 from 07:10: 08:00, 09:00 and 10:00 were missed; the first is due.
    assert hourly.next_tick(at(2026, 1, 5, 7, 10), now=at(2026, 1, 5, 10, 30)) == at(2026, 1, 5, 8)
