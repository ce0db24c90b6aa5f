"""The native protocol's four routes."""

from django.urls import path

from agents.protocols.native import views
from agents.protocols.urls import VERSION

urlpatterns = [
    path(f"{VERSION}/invoke", views.InvokeView.as_view(), name="invoke"),
    path(f"{VERSION}/invoke-stream", views.InvokeStreamView.as_view(), name="invoke-stream"),
    path(f"{VERSION}/invoke-task", views.InvokeTaskView.as_view(), name="invoke-task"),
    path(
        f"{VERSION}/invoke-task-stream",
        views.InvokeTaskStreamView.as_view(),
        name="invoke-task-stream",
    ),
]
