"""The webhook receiver and settings (tests/support/webhooks.py) for every test here."""

from tests.support.webhooks import receiver, webhooks_on_loopback

__all__ = ["receiver", "webhooks_on_loopback"]
