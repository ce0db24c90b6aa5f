"""The admin: environments, agents and their versions, catalogs, API clients, MCP servers,
runs."""

from agents.admin import catalog, mcp, runs

__all__ = ["catalog", "mcp", "runs"]
