from django.urls import path

from guardrails.api.views import GuardrailListView

urlpatterns = [path("guardrails", GuardrailListView.as_view(), name="guardrail-list")]
