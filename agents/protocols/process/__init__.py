"""The agent API protocol (seeds/agent-api-protocol.txt), route `process`: its types
(`models`), its request (`request`), the encoder of a run's events into its stream of
typed objects (`encoder`) and its refusals (`errors`).

A response goes `created` ▸ `in_progress` ▸ `completed` (or `failed`). In between, each
message of the turn goes `created` ▸ its content (text as `delta: true` segments, then the
whole part with `status: completed`) ▸ `completed`. Tool calls are `function_call`
messages and their results `function_call_output` messages, each carrying one data part
(`FunctionCall` / `FunctionCallOutput`). Every streamed object carries a
`sequence_number`, 0, 1, 2, … without gaps.

Where the document is silent (decisions, see also docs/api.md#process):
- `sequence_number` is an integer: the document types it `str` on BaseResponse but asks
  for it to order events; the base `Event` it inherits from is not shown.
- Every message the agent produces has role `assistant` (the document's roles have no
  `tool`); the tool's side is told apart by the message `type`.
- One `function_call` message per call and one `function_call_output` message per result,
  in the order the runtime reports them (the calls of one step, then their results).
- A tool that failed still gives a completed `function_call_output` message (the run goes
  on); the message's `code` is `tool_error` and its `message` the result text.
- A structured answer (a `structured_output` tool) is an assistant message with one data
  part holding the object; custom outputs (RAG source nodes, a guardrail's verdict) are a
  data part after the answer's text, in the final assistant message.
- A message cut short by a failure ends with `status: failed` and the run's `code` and
  `message`; the response then fails with `error {code, message}`.
- The response id is the run's (`resp_…`), message ids are `msg_<uuid4>`, but an
  `mcp_approval_request` message's, which is its approval request's id.
"""
