"""`{% sso_login as sso %}`: the admin login page's single sign-on button, when it is on."""

from __future__ import annotations

from typing import Any

from django import template
from django.conf import settings
from django.urls import reverse

from agents.access.sso.config import sso_config

register = template.Library()


@register.simple_tag
def sso_login() -> dict[str, Any] | None:
    """The button's provider name and URL, and whether the password form shows too; None
    while single sign-on is off."""
    config = sso_config()
    if config is None:
        return None
    return {
        "name": config.provider_name,
        "url": reverse("sso-login"),
        "password_form": settings.OIDC_LOCAL_LOGIN != "off",
    }
