"""Evaluations' routes under /v1 (mounted by agents/api/urls.py)."""

from django.urls import path

from agents.evals import api_datasets as datasets
from agents.evals import api_experiments as experiments

urlpatterns = [
    path("datasets", datasets.DatasetListView.as_view(), name="dataset-list"),
    path(
        "datasets/import/promptfoo",
        datasets.PromptfooImportView.as_view(),
        name="dataset-import-promptfoo",
    ),
    path("datasets/<str:datasetId>", datasets.DatasetDetailView.as_view(), name="dataset-detail"),
    path("datasets/<str:datasetId>/cases", datasets.CaseListView.as_view(), name="dataset-cases"),
    path(
        "datasets/<str:datasetId>/cases/remove",
        datasets.CaseRemoveView.as_view(),
        name="dataset-cases-remove",
    ),
    path(
        "datasets/<str:datasetId>/cases/from-run",
        datasets.CaseFromRunView.as_view(),
        name="dataset-cases-from-run",
    ),
    path(
        "datasets/<str:datasetId>/cases/<str:caseId>",
        datasets.CaseDetailView.as_view(),
        name="dataset-case-detail",
    ),
    path("experiments", experiments.ExperimentListView.as_view(), name="experiment-list"),
    path(
        "experiments/compare",
        experiments.ExperimentCompareView.as_view(),
        name="experiment-compare",
    ),
    path(
        "experiments/<str:experimentId>",
        experiments.ExperimentDetailView.as_view(),
        name="experiment-detail",
    ),
    path(
        "experiments/<str:experimentId>/results",
        experiments.ExperimentResultsView.as_view(),
        name="experiment-results",
    ),
    path(
        "experiments/<str:experimentId>/cancel",
        experiments.ExperimentCancelView.as_view(),
        name="experiment-cancel",
    ),
    path("runs/<str:runId>/feedback", datasets.RunFeedbackView.as_view(), name="run-feedback"),
    path(
        "agents/<str:agentId>/aliases/<str:name>/gate",
        experiments.AliasGateView.as_view(),
        name="alias-gate",
    ),
]
