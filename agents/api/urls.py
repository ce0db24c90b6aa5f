from django.urls import path

from agents.access.api import TokenView
from agents.api import agents, aliases, catalogs, runs, usage, versions
from agents.audit import urls as audit
from agents.budgets import urls as budgets
from agents.evals import urls as evals
from agents.mcp_registry import urls as mcp_registry
from agents.protocols.chat_completions import urls as chat_completions
from agents.protocols.native import urls as native
from agents.protocols.openai import urls as openai
from agents.protocols.process import urls as process
from agents.protocols.respond import urls as respond
from agents.schedules import urls as schedules
from agents.webhooks import urls as webhooks

urlpatterns = [
    path("auth/token", TokenView.as_view(), name="auth-token"),
    path("environments", catalogs.EnvironmentListView.as_view(), name="environment-list"),
    path("models", catalogs.ModelListView.as_view(), name="model-list"),
    path("models/<path:modelId>", catalogs.ModelDetailView.as_view(), name="model-detail"),
    path("agents", agents.AgentListView.as_view(), name="agent-list"),
    path("runs", runs.RunListView.as_view(), name="run-list"),
    path("usage", usage.UsageView.as_view(), name="usage"),
    *mcp_registry.urlpatterns,  # /mcp-servers
    *schedules.urlpatterns,  # /agents/{id}/schedules, /schedules/{id}
    *evals.urlpatterns,  # /datasets, /experiments, /runs/{id}/feedback, alias gates
    path("runs/<str:runId>", runs.RunDetailView.as_view(), name="run-detail"),
    path("runs/<str:runId>/cancel", runs.RunCancelView.as_view(), name="run-cancel"),
    path("runs/<str:runId>/events", runs.RunEventsView.as_view(), name="run-events"),
    path(
        "runs/<str:runId>/approvals", native.views.RunApprovalsView.as_view(), name="run-approvals"
    ),
    path("threads/<str:threadId>", runs.ThreadDetailView.as_view(), name="thread-detail"),
    path("agents/types", catalogs.AgentTypeListView.as_view(), name="agent-types"),
    path("agents/lookup", agents.AgentLookupView.as_view(), name="agent-lookup"),
    path("agents/versions/batch-get", versions.BatchGetView.as_view(), name="version-batch-get"),
    path("agents/<str:agentId>", agents.AgentDetailView.as_view(), name="agent-detail"),
    path("agents/<str:agentId>/versions", versions.VersionListView.as_view(), name="version-list"),
    path(
        "agents/<str:agentId>/versions/<str:versionId>",
        versions.VersionDetailView.as_view(),
        name="version-detail",
    ),
    path("agents/<str:agentId>/aliases", aliases.AliasListView.as_view(), name="alias-list"),
    path(
        "agents/<str:agentId>/aliases/history",
        aliases.AliasHistoryView.as_view(),
        name="alias-history",
    ),
    path(
        "agents/<str:agentId>/aliases/<str:name>",
        aliases.AliasDetailView.as_view(),
        name="alias-detail",
    ),
    *webhooks.urlpatterns,  # /webhook-secret, /agents/{id}/webhooks
    *budgets.urlpatterns,  # /budgets
    *audit.urlpatterns,  # /audit
    # The protocols' routes, each in its own package (docs/architecture.md#request-path).
    *chat_completions.urlpatterns,
    *openai.urlpatterns,
    *process.urlpatterns,
    *respond.urlpatterns,
    *native.urlpatterns,
]
