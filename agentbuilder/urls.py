from django.contrib import admin
from django.urls import include, path, re_path

from agentbuilder.api.errors import unknown_path
from agentbuilder.api.schema import DocsView, SchemaView
from agentbuilder.metrics import metrics

urlpatterns = [
    # Single sign-on (agents.access.sso): before the admin, whose catch-all would take it.
    path("admin/oidc/", include("agents.access.sso.urls")),
    path("admin/", admin.site.urls),
    # Prometheus's scrape path, outside the API (agentbuilder.metrics).
    path("metrics", metrics, name="metrics"),
    # The OAuth authorization server: /.well-known/ metadata and /oauth/ endpoints.
    path("", include("agents.access.oauth.urls")),
    path("v1/schema", SchemaView.as_view(), name="schema"),
    path("v1/docs", DocsView.as_view(url_name="schema"), name="docs"),
    path("v1/", include("agents.api.urls")),
    path("v1/", include("agents.protocols.a2a.urls")),
    path("v1/", include("guardrails.api.urls")),
    path("v1/", include("retrieval.api.urls")),
    # Last: any other /v1/ path is the API's JSON 404, DEBUG on or off (Django answers a
    # path no pattern matches with its HTML debug page under DEBUG, never calling
    # handler404; APPEND_SLASH's redirect of `/v1/agents/` is no answer for an API either).
    re_path(r"^v1/", unknown_path),
]

handler400 = "agentbuilder.api.errors.bad_request"
handler403 = "agentbuilder.api.errors.permission_denied"
handler404 = "agentbuilder.api.errors.not_found"
handler500 = "agentbuilder.api.errors.server_error"
