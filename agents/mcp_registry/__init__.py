"""The MCP server registry: remote MCP servers an admin registers for an environment, or
for all (the `McpServer` rows in agents/models.py).

Its reads (`selectors`) and writes (`services`), a server as the client connects to it and
its tools listed live (`endpoints`), header values encrypted at rest (`secrets`), the
servers of a run built from its rows and the request's own (`run_servers`, with the
ORM-free `request` the protocols fill), the REST API at /v1/mcp-servers (`views`, `urls`)
and the admin (`admin`).

Its neighbours: `agents.mcp_client` talks to the servers (the runtime uses it and never
this registry); `agents.protocols.mcp_server` is our own MCP server, every agent a tool.
"""
