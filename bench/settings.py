"""The project's settings with one change: the URLs gain the baseline view of bench/urls.py."""

from agentbuilder.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
