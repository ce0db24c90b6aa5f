"""Evaluations' routes under /v1 (mounted by agents/api/urls.py)."""

from django.urls import path

from agents.evals import views

urlpatterns = [
    path("datasets", views.DatasetListView.as_view(), name="dataset-list"),
    path(
        "datasets/import/promptfoo",
        views.PromptfooImportView.as_view(),
        name="dataset-import-promptfoo",
    ),
    path("datasets/<str:datasetId>", views.DatasetDetailView.as_view(), name="dataset-detail"),
    path("datasets/<str:datasetId>/cases", views.CaseListView.as_view(), name="dataset-cases"),
    path(
        "datasets/<str:datasetId>/cases/remove",
        views.CaseRemoveView.as_view(),
        name="dataset-cases-remove",
    ),
    path(
        "datasets/<str:datasetId>/cases/from-run",
        views.CaseFromRunView.as_view(),
        name="dataset-cases-from-run",
    ),
    path(
        "datasets/<str:datasetId>/cases/<str:caseId>",
        views.CaseDetailView.as_view(),
        name="dataset-case-detail",
    ),
    path("experiments", views.ExperimentListView.as_view(), name="experiment-list"),
    path("experiments/compare", views.ExperimentCompareView.as_view(), name="experiment-compare"),
    path(
        "experiments/<str:experimentId>",
        views.ExperimentDetailView.as_view(),
        name="experiment-detail",
    ),
    path(
        "experiments/<str:experimentId>/results",
        views.ExperimentResultsView.as_view(),
        name="experiment-results",
    ),
    path(
        "experiments/<str:experimentId>/cancel",
        views.ExperimentCancelView.as_view(),
        name="experiment-cancel",
    ),
    path("runs/<str:runId>/feedback", views.RunFeedbackView.as_view(), name="run-feedback"),
    path(
        "agents/<str:agentId>/aliases/<str:name>/gate",
        views.AliasGateView.as_view(),
        name="alias-gate",
    ),
]
