"""Schedules: an agent's version run on a cron, as background runs of the schedule's owner
(docs/api.md#schedules)."""
