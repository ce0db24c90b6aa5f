"""The scheduler beat runs (CELERY_BEAT_SCHEDULER): django-celery-beat's, reading the
PeriodicTask rows the schedule services write, with every cron loaded.

django-celery-beat's DatabaseScheduler loads a cron whose hour is a single number only
within two hours of it, to read fewer rows. A tick missed while beat was down is sent when
beat next loads its cron, so a daily 09:00 missed by a restart at 14:00 was sent at 07:00
the next day, two hours early, then again at 09:00. Loaded whatever its hour, the missed
tick is sent as soon as beat is back, once (agents.schedules.fire), and the next on time.
"""

from __future__ import annotations

from django.db.models import Q
from django_celery_beat.schedulers import DatabaseScheduler


class ScheduleScheduler(DatabaseScheduler):
    def _get_crontab_exclude_query(self) -> Q:
        return Q(pk__in=[])
