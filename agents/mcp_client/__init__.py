"""The MCP client: talking to remote MCP servers, whoever registered them.

The SDK client that lists and calls a server's tools (`client`), what it is given and
answers (`types`), the address guard every connection passes (`ssrf`) and the brief
listing cache (`cache`). Free of the ORM and of the registry, so the runtime's MCP tools
(agents/runtime/tools/mcp.py) use it directly.

Not to be confused with its two neighbours: `agents.mcp_registry`, the servers an admin
registers (rows, REST API, admin), which turns them into the endpoints this client connects
to; and `agents.protocols.mcp_server`, our own MCP server, which offers every agent as a
tool to other clients.
"""
