"""The agent API protocol's route."""

from django.urls import path

from agents.protocols.process import views
from agents.protocols.urls import VERSION

urlpatterns = [path(f"{VERSION}/process", views.ProcessView.as_view(), name="process")]
