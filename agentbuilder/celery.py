"""The Celery app. Without CELERY_BROKER_URL tasks run in the calling process (eager)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentbuilder.settings")

app = Celery("agentbuilder")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
