"""The budgets' routes under /v1 (mounted by agents/api/urls.py)."""

from django.urls import path

from agents.budgets.views import BudgetDetailView, BudgetListView

urlpatterns = [
    path("budgets", BudgetListView.as_view(), name="budget-list"),
    path("budgets/<str:budgetId>", BudgetDetailView.as_view(), name="budget-detail"),
]
