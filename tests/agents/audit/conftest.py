"""The webhook receiver's loopback allowance (tests/support/webhooks.py) for the tests here."""

from tests.support.webhooks import webhooks_on_loopback

__all__ = ["webhooks_on_loopback"]
