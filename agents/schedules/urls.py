"""The schedules' routes under /v1 (mounted by agents/api/urls.py)."""

from django.urls import path

from agents.schedules.views import ScheduleDetailView, ScheduleListView

urlpatterns = [
    path("agents/<str:agentId>/schedules", ScheduleListView.as_view(), name="schedule-list"),
    path("schedules/<str:scheduleId>", ScheduleDetailView.as_view(), name="schedule-detail"),
]
