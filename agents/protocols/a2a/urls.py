"""The A2A routes (agents.protocols.a2a.views): the cards, and each agent's JSON-RPC endpoint."""

from django.urls import path

from agents.protocols.a2a import views

urlpatterns = [
    path("a2a", views.A2AAgentListView.as_view(), name="a2a-agents"),
    path(
        "a2a/<str:name>/.well-known/agent-card.json",
        views.A2AAgentCardView.as_view(),
        name="a2a-agent-card",
    ),
    path("a2a/<str:name>", views.A2AEndpointView.as_view(), name="a2a-endpoint"),
]
