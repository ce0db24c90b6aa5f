"""The webhooks' routes under /v1 (mounted by agents/api/urls.py)."""

from django.urls import path

from agents.webhooks.views import WebhookDetailView, WebhookListView, WebhookSecretView

urlpatterns = [
    path("webhook-secret", WebhookSecretView.as_view(), name="webhook-secret"),
    path("agents/<str:agentId>/webhooks", WebhookListView.as_view(), name="webhook-list"),
    path(
        "agents/<str:agentId>/webhooks/<str:webhookId>",
        WebhookDetailView.as_view(),
        name="webhook-detail",
    ),
]
