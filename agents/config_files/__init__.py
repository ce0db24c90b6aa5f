"""Config as code: an environment's agents as YAML files, one per agent, and back again.

Ids differ between installations, so in a file a task agent tool names its agent
(`agentName` instead of `agentId`) and an MCP server reference its server (`name` instead
of `id`); import resolves those names in the target environment. Import writes through
the services and never rewrites a version: a file whose config, label or notes differ
from the agent's latest version adds one, made from the file's last version.
"""

from __future__ import annotations

from agents.config_files.export import ExportedFile, agents_export
from agents.config_files.importer import Change, ImportFailed, Problem, agents_import

__all__ = ["Change", "ExportedFile", "ImportFailed", "Problem", "agents_export", "agents_import"]
