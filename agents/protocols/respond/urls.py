"""The agent HTTP contract's route."""

from django.urls import path

from agents.protocols.respond import views
from agents.protocols.urls import VERSION

urlpatterns = [path(f"{VERSION}/respond", views.RespondView.as_view(), name="respond")]
