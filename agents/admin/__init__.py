"""The admin: environments, agents and their versions, catalogs, API clients, runs."""

from agents.admin import catalog, runs

__all__ = ["catalog", "runs"]
