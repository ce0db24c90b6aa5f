"""The authorization server's routes, at the server's root (RFC 8414 and RFC 9728 put the
metadata under /.well-known/; the rest under /oauth/)."""

from django.urls import path
from oauth2_provider.views import RevokeTokenView

from agents.access.oauth import views
from agents.access.oauth.resources import A2A, MCP, METADATA_PREFIX

urlpatterns = [
    path(
        ".well-known/oauth-authorization-server",
        views.authorization_server_metadata,
        name="oauth-server-metadata",
    ),
    path(
        METADATA_PREFIX.lstrip("/") + MCP,
        views.resource_metadata_view(MCP),
        name="oauth-resource-mcp",
    ),
    path(
        METADATA_PREFIX.lstrip("/") + A2A,
        views.resource_metadata_view(A2A),
        name="oauth-resource-a2a",
    ),
    path("oauth/authorize", views.ConsentView.as_view(), name="oauth-authorize"),
    path("oauth/token", views.JsonTokenView.as_view(), name="oauth-token"),
    path("oauth/revoke", RevokeTokenView.as_view(), name="oauth-revoke"),
    path("oauth/register", views.RegistrationView.as_view(), name="oauth-register"),
]
