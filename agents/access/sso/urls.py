"""Single sign-on's routes, under /admin/oidc/ (agentbuilder/urls.py): the redirect URI to
register at the provider is <base>/admin/oidc/callback/."""

from django.urls import path

from agents.access.sso.config import CALLBACK_URL
from agents.access.sso.views import SsoCallback, SsoStart

urlpatterns = [
    path("login/", SsoStart.as_view(), name="sso-login"),
    path("callback/", SsoCallback.as_view(), name=CALLBACK_URL),
]
