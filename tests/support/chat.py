"""Chat completions from the client's side: the messages of a stream, and the run an answer
recorded once it is finished."""

import time

from agents.models import Run


# Copied verbatim from seeds/agent-chat-completions-api.txt ("Complete working code").
def get_messages(chat_stream):
    messages = []
    previous_chunk_id = None
    for chunk in chat_stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        # Detect new message when chunk ID changes
        if chunk.id != previous_chunk_id:
            previous_chunk_id = chunk.id
            messages.append({"role": delta.role, "content": ""})
        current_message = messages[-1]
        # Set tool_call_id for tool result messages
        if delta.role == "tool":
            current_message["tool_call_id"] = delta.tool_call_id
        # Accumulate content for all message types (assistant text, tool results)
        current_message["content"] += delta.content if delta.content else ""
        # Process tool calls - function names and arguments are streamed
        for tool_call in delta.tool_calls or []:
            # Initialize tool_calls array if needed
            if "tool_calls" not in current_message:
                current_message["tool_calls"] = []
            # Add new tool call if index exceeds current array length
            if tool_call.index >= len(current_message["tool_calls"]):
                current_message["tool_calls"].append(
                    {
                        "id": tool_call.id,
                        "type": "function",
                        "function": {
                            "name": tool_call.function.name,
                            "arguments": tool_call.function.arguments or "",
                        },
                    }
                )
                # If the first tool call event has arguments, continue to next event
                if tool_call.function.arguments:
                    continue
            # Accumulate function arguments (streamed incrementally)
            current_message["tool_calls"][tool_call.index]["function"]["arguments"] += (
                tool_call.function.arguments or ""
            )
    # Anthropic fix: normalize empty argument strings to valid JSON
    for msg in messages:
        if msg["role"] == "assistant" and len(msg.get("tool_calls", [])) > 0:
            for tool_call in msg["tool_calls"]:
                if not tool_call["function"]["arguments"].strip():
                    tool_call["function"]["arguments"] = "{}"
    return messages


def finished_run(run_id: str) -> Run:
    """The run once the server has recorded its end (a stream's last bytes may come first)."""
    deadline = time.monotonic() + 30  # returns when it holds; the margin is a busy machine's
    while (run := Run.objects.get(pk=run_id)).status == "in_progress":
        assert time.monotonic() < deadline, "the run was never recorded"
        time.sleep(0.02)
    return run
