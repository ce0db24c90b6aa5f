"""The embedded PostgreSQL (with pgvector) used when DATABASE_URL is unset.

`pgserver` ships PostgreSQL 16 with the vector extension as a wheel, so a fresh machine
needs no database installed by hand. The server keeps running after the process that
started it exits (`cleanup_mode=None`): uvicorn, the Celery worker, `manage.py` and the
test workers all share one server under `./var/pgdata`, reached over its unix socket.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

logger = logging.getLogger(__name__)

DATABASE_NAME = "agentbuilder"


def database_settings(pgdata: Path) -> dict[str, Any]:
    """Start (or reuse) the embedded server and return a Django DATABASES entry for it."""
    socket_dir = _start(pgdata)
    _ensure_database(socket_dir, DATABASE_NAME)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE_NAME,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": socket_dir,
        "PORT": "",
    }


def _start(pgdata: Path) -> str:
    # platformdirs warns that XDG_RUNTIME_DIR is unset on servers; pgserver only uses it
    # for its lock file, and the fallback under /tmp is fine.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import pgserver
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise RuntimeError(
                "DATABASE_URL is unset and the embedded database needs the 'pgserver' "
                "package: pip install -r requirements.txt"
            ) from exc
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        server = pgserver.get_server(pgdata, cleanup_mode=None)
    host = parse_qs(urlparse(server.get_uri()).query)["host"][0]
    return host


def _ensure_database(socket_dir: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(
        host=socket_dir, user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            logger.info("creating database %s on the embedded server", name)
            # Another process (a second test worker) may create it first.
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
