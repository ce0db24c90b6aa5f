"""The chat completions routes in the seed gateway's layout: per agent, and by `model`."""

from django.urls import path

from agents.protocols.chat_completions import views
from agents.protocols.urls import VERSION

urlpatterns = [
    path(
        f"{VERSION}/chat/completions", views.ChatCompletionsView.as_view(), name="chat-completions"
    ),
    path(
        "chat/completions", views.ModelChatCompletionsView.as_view(), name="model-chat-completions"
    ),
]
