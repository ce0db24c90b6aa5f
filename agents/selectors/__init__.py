"""Reads, one module per sub-domain (agents, versions, aliases, runs, environments, the
model catalog); import the one you read from. Every selector takes the caller and returns
only what the caller may see."""
