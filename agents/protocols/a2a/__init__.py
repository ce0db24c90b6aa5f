"""A2A, the Agent2Agent protocol (a2a-protocol.org), over the runtime's events: each agent
an A2A agent with a card and a JSON-RPC endpoint (agents.api.a2a).

    dialects.py  the two method sets one endpoint answers (1.0's SendMessage, 0.3's
                 message/send)
    request.py   the JSON-RPC envelope and params → the SDK's 1.0 types → a RunRequest's
                 messages (tool, RAG agents) or inputs (task agents)
    encoder.py   events → Task, TaskStatusUpdateEvent, TaskArtifactUpdateEvent, as SSE or
                 one Task; a run record → a Task
    errors.py    JSON-RPC error bodies with A2A's codes
    card.py      an agent's card
    running.py   the process's A2A runs, cancelable

The SDK (`a2a-sdk`) gives the types, the 0.3 ⇄ 1.0 conversions and the error codes; the
HTTP side is Django's, so a task is a run like any other, recorded on the one run path.
"""
