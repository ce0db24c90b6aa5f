"""OpenAI chat completions over the runtime's events (agent-chat-completions-api.txt): the
seed's layout, on `/v1/chat/completions` and the per-agent `chat/completions`. The
OpenAI-compatible base `/v1/openai` answers with OpenAI's own semantics instead (one
message, the client's tools): agents.protocols.openai, over this package's request.

The request is OpenAI's body plus the agent endpoint's `iteration_limit` and `mcp_servers`.
The answer is a `chat.completion` object, or with `stream: true` server-sent events of
`chat.completion.chunk`s in which every message of the turn has a chunk id of its own:

    assistant  role chunk, content deltas, tool calls (index, id, function.name first, then
               function.arguments fragments), finish_reason "tool_calls"
    tool       one chunk per result: role "tool", tool_call_id, content
    assistant  role chunk, content deltas, finish_reason "stop"
    usage      choices [], only with stream_options.include_usage
    data: [DONE]

A run that fails after the stream began ends with OpenAI's mid-stream error event
`data: {"error": {...}}`, then `data: [DONE]`.

What the agent's version decides, the request cannot change: the model, the system prompt,
the inference settings and the tools. `temperature`, `top_p`, `max_tokens`, `stop`, `seed`,
`response_format`, `tool_choice` and other sampling options are accepted and ignored; a
request that brings its own `tools`, or asks for more than one choice (`n`), is refused
(on these routes: `/v1/openai` takes the client's tools).
`model` names the agent on `POST /v1/chat/completions` and is ignored on the per-agent route.

`model` in the answer names the agent and version that answered (`calculator@3`), as the
request named it; `llm_model` is the model that served it (the offline model says so).

Two extensions: a final answer with custom outputs (RAG sources, a guardrail's block) carries
them as `custom_outputs` on the completion object and on the stream's "stop" chunk.
"""
