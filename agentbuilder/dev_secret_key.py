"""The signing key of the dev set-up: random, made on first use and kept under VAR_DIR.

Settings use it only when DEBUG is on and SECRET_KEY is unset, so no key written in the
source ever signs a token; a deployment sets SECRET_KEY (or SECRET_KEY_FILE) itself.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured


def dev_secret_key(path: Path) -> str:
    """The key stored at `path`, created (mode 0600) if there is none yet.

    Raises ImproperlyConfigured if the file is there but empty.
    """
    try:
        key = path.read_text().strip()
    except FileNotFoundError:
        key = _create(path)
    if not key:
        raise ImproperlyConfigured(f"{path} is empty: delete it and a new key will be made")
    return key


def _create(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    # Written aside (mkstemp: mode 0600) and linked into place, so processes starting at
    # once (uvicorn, manage.py, test workers) all keep the first key, never a partial file.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as file:
            file.write(key + "\n")
        try:
            os.link(tmp, path)
        except FileExistsError:
            return path.read_text().strip()
    finally:
        os.unlink(tmp)
    return key
