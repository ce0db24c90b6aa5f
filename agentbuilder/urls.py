from django.contrib import admin
from django.urls import include, path

from agentbuilder.api.schema import DocsView, SchemaView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("v1/schema", SchemaView.as_view(), name="schema"),
    path("v1/docs", DocsView.as_view(url_name="schema"), name="docs"),
    path("v1/", include("agents.api.urls")),
    path("v1/", include("agents.api.a2a_urls")),
    path("v1/", include("guardrails.api.urls")),
]

handler400 = "agentbuilder.api.errors.bad_request"
handler403 = "agentbuilder.api.errors.permission_denied"
handler404 = "agentbuilder.api.errors.not_found"
handler500 = "agentbuilder.api.errors.server_error"
