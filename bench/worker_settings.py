"""The project's settings for a Celery worker that keeps its database connections.

Celery's Django fixup closes every connection before and after each task, and in a
prefork worker with Django's connection pool it closes the pool too (celery/fixups/
django.py `_close_database`), so each task opens new connections. With CELERY_DB_REUSE_MAX
it closes them only every that many tasks. bench/ingestion.py runs one worker with these
settings next to one with the project's own.
"""

from agentbuilder.settings import *  # noqa: F403

CELERY_DB_REUSE_MAX = 1000
