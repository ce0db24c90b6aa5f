"""The platform as an MCP server (docs/api.md#mcp): `/v1/mcp`, streamable HTTP, Bearer token.

Every agent of the token's environment that the caller may INVOKE is one tool:

    name         the agent's name, unchanged: agent names (letters, digits, `.`, `_`, `-`,
                 at most 100, enforced by a database constraint) are valid MCP tool names
                 as they are, so no mapping is needed and a call finds its agent by name
                 (ignoring case, as agent names are unique ignoring case)
    title        the agent's display name, when it has one
    description  the agent's description
    inputSchema  tool and RAG agents: `{message, threadId?}`; task agents: the latest
                 version's `inputSchema`

A call runs the agent's `latest` version. `name@ref` (a number, an alias, `latest` or a
version id, as chat completions' `model` takes it) runs another version; such names are not
listed, because `@` is not a tool-name character and every character that is may already
be part of an agent's name, so no separator could tell an alias apart.

The answer: the text as `content`; a structured answer (a task agent's output schema, a
`structured_output` tool) also as `structuredContent`, and a RAG answer as
`structuredContent: {answer, sources}`. `_meta` carries `agentbuilder/runId`,
`agentbuilder/answeredBy` (`calculator@3`), `agentbuilder/threadId` and
`agentbuilder/customOutputs` (a guardrail's block among them). Text
deltas travel as progress notifications when the client sent a progress token. A run that
fails, or arguments that do not fit, is a result with `isError`, never a JSON-RPC error;
an unknown tool is a JSON-RPC error, as the specification asks.

`envelope` refuses, before the SDK reads it, a request whose echoed fields (`id`,
`_meta.progressToken`) are past their bound, or whose params hold text PostgreSQL cannot
store (-32602 naming the field); `request` turns a call into a RunRequest, `tools` lists
the tools, `encoder` turns a run's events into progress and a CallToolResult;
agents.protocols.mcp_server.server serves them.
"""
