"""A2A, the Agent2Agent protocol (a2a-protocol.org), over the runtime's events: each agent
an A2A agent with a card and a JSON-RPC endpoint (agents.protocols.a2a.views).

    dialects.py  the two method sets one endpoint answers (1.0's SendMessage, 0.3's
                 message/send)
    request.py   the JSON-RPC envelope and params → the SDK's 1.0 types → a RunRequest's
                 messages (tool, RAG agents) or inputs (task agents)
    encoder.py   events → Task, TaskStatusUpdateEvent, TaskArtifactUpdateEvent, as SSE or
                 one Task; a run record → a Task
    errors.py    JSON-RPC error bodies with A2A's codes
    card.py      an agent's card
    following.py a live task's updates for resubscribe, from its stored events
    views.py     the cards' views and the JSON-RPC endpoint, over the one run path
    urls.py      their routes

The SDK (`a2a-sdk`) gives the types, the 0.3 ⇄ 1.0 conversions and the error codes; the
HTTP side is Django's, so a task is a run like any other, recorded on the one run path.
"""
