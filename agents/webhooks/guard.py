"""Which URLs may receive webhooks: MCP's address guard (agents.mcp_client.ssrf, under the
same settings), checked when a URL is given and again before each attempt."""

from __future__ import annotations

from django.conf import settings

from agentbuilder.errors import Invalid, Loc
from agents.mcp_client.ssrf import UrlRefused, check_url, policy_from_settings
from agents.webhooks.request import WebhookBody


def webhooks_check_enabled(loc: Loc) -> None:
    """Raises Invalid at `loc` where WEBHOOKS_ENABLED is off."""
    if not settings.WEBHOOKS_ENABLED:
        raise Invalid.at(loc, "webhooks are not enabled on this server (WEBHOOKS_ENABLED)")


def webhook_url_check(url: str, loc: Loc) -> None:
    """Refuse, at `loc`, a URL the guard refuses (blocks on DNS: not for the event loop).
    Raises Invalid."""
    try:
        check_url(url, policy_from_settings())
    except UrlRefused as exc:
        message = str(exc).replace("for MCP servers", "for webhooks")
        raise Invalid.at(loc, message) from None


def webhook_check(webhook: WebhookBody, loc: Loc = ("body", "webhook")) -> None:
    """A request's `webhook`, before its run opens. Raises Invalid at `loc` + url."""
    webhooks_check_enabled((*loc, "url"))
    webhook_url_check(webhook.url, (*loc, "url"))
