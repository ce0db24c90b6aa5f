"""Reads, one module per sub-domain (agents, versions, aliases, runs, the model catalog;
environments are agents.access.environments); import the one you read from. Every selector
takes the caller and returns only what the caller may see."""
