"""The OpenAI-compatible base: `OpenAI(base_url=".../v1/openai")` works unmodified."""

from django.urls import path

from agents.protocols.openai import views

urlpatterns = [
    path("openai/models", views.OpenAIModelListView.as_view(), name="openai-models"),
    path(
        # `<path:>`: an OpenAI model id may hold a slash (`openai/gpt-4o-mini`); no agent is
        # named so, and the answer is OpenAI's model_not_found rather than the API's 404.
        "openai/models/<path:model>",
        views.OpenAIModelDetailView.as_view(),
        name="openai-model",
    ),
    path(
        "openai/chat/completions",
        views.OpenAIChatCompletionsView.as_view(),
        name="openai-chat-completions",
    ),
]
