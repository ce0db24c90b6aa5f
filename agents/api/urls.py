from django.urls import path

from agents.access.api import TokenView
from agents.api import (
    agents,
    aliases,
    catalogs,
    chat,
    documents,
    invoke,
    mcp,
    openai_base,
    process,
    respond,
    runs,
    versions,
)

VERSION = "agents/<str:agentId>/versions/<str:versionId>"

urlpatterns = [
    path("auth/token", TokenView.as_view(), name="auth-token"),
    path("environments", catalogs.EnvironmentListView.as_view(), name="environment-list"),
    path("models", catalogs.ModelListView.as_view(), name="model-list"),
    path("agents", agents.AgentListView.as_view(), name="agent-list"),
    path("runs", runs.RunListView.as_view(), name="run-list"),
    path("documents", documents.DocumentListView.as_view(), name="document-list"),
    path(
        "documents/<str:documentId>",
        documents.DocumentDetailView.as_view(),
        name="document-detail",
    ),
    path("search", documents.SearchView.as_view(), name="search"),
    *mcp.urlpatterns,  # /mcp-servers
    path("runs/<str:runId>", runs.RunDetailView.as_view(), name="run-detail"),
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
    # protocol routes (respond, chat completions, process): one path(...) line each below
    path(
        f"{VERSION}/chat/completions", chat.ChatCompletionsView.as_view(), name="chat-completions"
    ),
    path(
        "chat/completions", chat.ModelChatCompletionsView.as_view(), name="model-chat-completions"
    ),
    # The OpenAI-compatible base: `OpenAI(base_url=".../v1/openai")` works unmodified.
    path("openai/models", openai_base.OpenAIModelListView.as_view(), name="openai-models"),
    path(
        # `<path:>`: an OpenAI model id may hold a slash (`openai/gpt-4o-mini`); no agent is
        # named so, and the answer is OpenAI's model_not_found rather than the API's 404.
        "openai/models/<path:model>",
        openai_base.OpenAIModelDetailView.as_view(),
        name="openai-model",
    ),
    path(
        "openai/chat/completions",
        openai_base.OpenAIChatCompletionsView.as_view(),
        name="openai-chat-completions",
    ),
    path(f"{VERSION}/process", process.ProcessView.as_view(), name="process"),
    path(f"{VERSION}/respond", respond.RespondView.as_view(), name="respond"),
    path(f"{VERSION}/invoke", invoke.InvokeView.as_view(), name="invoke"),
    path(f"{VERSION}/invoke-stream", invoke.InvokeStreamView.as_view(), name="invoke-stream"),
    path(f"{VERSION}/invoke-task", invoke.InvokeTaskView.as_view(), name="invoke-task"),
    path(
        f"{VERSION}/invoke-task-stream",
        invoke.InvokeTaskStreamView.as_view(),
        name="invoke-task-stream",
    ),
]
