"""The admin: environments, agents and their versions, catalogs, API clients, MCP servers,
runs, documents."""

from agents.admin import (
    agents,
    api_clients,
    documents,
    environments,
    llm_models,
    mcp,
    runs,
    versions,
)

__all__ = [
    "agents",
    "api_clients",
    "documents",
    "environments",
    "llm_models",
    "mcp",
    "runs",
    "versions",
]
