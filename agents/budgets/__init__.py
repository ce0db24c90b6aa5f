"""Budgets: what an environment, an agent, a user or an API client may spend per day or
month, in USD, tokens or both; enforced before a run (402) and between its model calls
(`budget_exceeded`), warned at 80 % and 100 % (docs/api.md#budgets,
docs/architecture.md#budgets)."""
