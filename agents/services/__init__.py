"""Writes, one module per sub-domain (agents, versions, aliases, config checks, runs; API clients
and tokens are in agents.access); import the one you write through. Views, the admin and the
dev set-up all come through these."""
