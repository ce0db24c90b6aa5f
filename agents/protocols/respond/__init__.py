"""The evaluation platform's agent HTTP contract (seeds/agent-http-contract.txt): `respond`.

In: an OpenAI-style chat history and optional metadata. Out: every message of the turn in
order (assistant messages carrying `tool_calls`, one `role: tool` message per executed
call, the final assistant reply), with `model`, `provider`, `usage` and `metadata`.

The models mirror the contract's tables (AgentRequest, ChatMessage, ToolCall, TokenUsage,
AgentResponse) with the contract's own snake_case names. `request.history_messages`
maps a request onto the runtime's messages; `encoder.TurnEncoder` turns a run's events
into the response.
"""
