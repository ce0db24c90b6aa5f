"""The test settings, with the stall app (tests.agents.runs.stall.apps)."""

from tests.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.agents.runs.stall.apps.StallConfig"]  # noqa: F405
