"""OpenAI's chat completions semantics, for `/v1/openai` (docs/api.md#openai): what the
OpenAI SDKs and the agent frameworks built on them (openai-agents, LangChain, pydantic-ai)
read, unlike the seed's layout (agents.protocols.chat_completions), which shows every
message of the turn.

One completion is one assistant message, the same whether streamed or not:

- `content`: the text the agent said in this turn (each model step's text, set off by a
  blank line after tool activity), or a structured answer's JSON alone;
- `tool_calls` with `finish_reason: "tool_calls"`: only calls of the *client's* tools
  (the request's `tools`); otherwise `finish_reason: "stop"`;
- the agent's own tool calls and results, which run on the server, never appear as
  `tool_calls` or `role: "tool"` messages: a chunk with an empty `delta` carries each in
  an `agentbuilder` object (`{"event": "tool_call" | "tool_result", "name", "arguments" |
  "result", "id"}`), and the whole answer lists them under `agentbuilder.events`.
  Standard clients ignore both keys.

Intermediate text counts: it was streamed before the model's next step showed whether a
tool call would follow, and holding every step's text until then would hold the final
answer's too; so the whole answer carries it as well. Text released before a guardrail
blocked the rest stays, followed by the guardrail's message (what the stream showed).

Client tools (agents.runtime.tool_agent says how a step that mixes them with the agent's
own is run): the client runs the calls and sends the history back with its `role: "tool"`
results; the next completion continues from there. Nothing is kept on the server beyond
what the history carries. `tool_choice` and `parallel_tool_calls` apply to the model
calls of the completion; a client tool named like one of the agent's, or on an agent that
calls no tools, is refused at its path.

The stream: a role chunk, then content deltas and `agentbuilder` chunks in the order they
happened, the client's tool calls (each whole in one chunk), the finish chunk, the usage
chunk with `stream_options.include_usage`, `data: [DONE]`. A run that fails after the
stream began ends with OpenAI's mid-stream error event, then `data: [DONE]`.
"""
