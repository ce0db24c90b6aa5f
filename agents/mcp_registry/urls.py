"""The registry's routes under /v1 (mounted by agents/api/urls.py)."""

from django.urls import path

from agents.mcp_registry.views import McpServerDetailView, McpServerListView, McpServerToolsView

urlpatterns = [
    path("mcp-servers", McpServerListView.as_view(), name="mcp-server-list"),
    path("mcp-servers/<str:serverId>", McpServerDetailView.as_view(), name="mcp-server-detail"),
    path("mcp-servers/<str:serverId>/tools", McpServerToolsView.as_view(), name="mcp-server-tools"),
]
