"""The A2A routes (agents.api.a2a): the cards, and each agent's JSON-RPC endpoint."""

from django.urls import path

from agents.api import a2a

urlpatterns = [
    path("a2a", a2a.A2AAgentListView.as_view(), name="a2a-agents"),
    path(
        "a2a/<str:name>/.well-known/agent-card.json",
        a2a.A2AAgentCardView.as_view(),
        name="a2a-agent-card",
    ),
    path("a2a/<str:name>", a2a.A2AEndpointView.as_view(), name="a2a-endpoint"),
]
