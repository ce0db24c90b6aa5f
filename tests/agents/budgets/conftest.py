"""The fake OpenAI-compatible model (tests/support/backends.py) and the webhook receiver
(tests/support/webhooks.py) for the tests here."""

from tests.support.backends import openai_server
from tests.support.webhooks import receiver, webhooks_on_loopback

__all__ = ["openai_server", "receiver", "webhooks_on_loopback"]
