"""The audit log's route under /v1 (mounted by agents/api/urls.py)."""

from django.urls import path

from agents.audit.views import AuditListView

urlpatterns = [path("audit", AuditListView.as_view(), name="audit-list")]
