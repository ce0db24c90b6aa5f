"""The admin: environments, agents and their versions, catalogs, API clients, MCP servers,
runs, usage, the approvals inbox, the audit log, schedules, datasets (documents:
retrieval.admin)."""

from agents.access import admin as access
from agents.access.oauth import admin as oauth  # registered OAuth clients, revocable
from agents.admin import (
    agents,
    approvals,
    llm_models,
    runs,
    usage,
    versions,
)
from agents.audit import admin as audit  # registers AuditRecord's read-only page
from agents.budgets import admin as budgets  # registers Budget's admin, with progress bars
from agents.evals import admin as evals  # registers Dataset's admin
from agents.mcp_registry import admin as mcp_registry  # registers McpServer's admin
from agents.schedules import admin as schedules  # registers Schedule's admin
from agents.webhooks import admin as webhooks  # agent webhooks, the delivery log

# Environments and API clients have their pages beside the rest of access
# (agents/access/admin.py); importing them here registers them with the others.
__all__ = [
    "access",
    "agents",
    "approvals",
    "audit",
    "budgets",
    "evals",
    "llm_models",
    "mcp_registry",
    "oauth",
    "runs",
    "schedules",
    "usage",
    "versions",
    "webhooks",
]
