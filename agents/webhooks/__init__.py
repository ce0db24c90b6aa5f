"""Webhooks: a run's events delivered to URLs as Standard Webhooks, signed with the
environment's secret, retried with backoff, each delivery kept for the admin
(docs/architecture.md#webhooks, docs/api.md#webhooks)."""
