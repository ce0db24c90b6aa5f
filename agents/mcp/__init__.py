"""MCP servers: the SDK client, the address guard, the listing cache, header secrets.

Everything here but `servers` (the registry's reads and writes) is free of the ORM, so the
runtime can use it.
"""
