from django.urls import path

from retrieval.api.views import DocumentDetailView, DocumentListView, SearchView

urlpatterns = [
    path("documents", DocumentListView.as_view(), name="document-list"),
    path("documents/<str:documentId>", DocumentDetailView.as_view(), name="document-detail"),
    path("search", SearchView.as_view(), name="search"),
]
