""".env.example claims to list every setting agentbuilder reads: hold it to that."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A variable read through django-environ: env.int("NAME", ...), env.str("NAME") ...
READ = re.compile(r"\benv(?:\.\w+)?\(\s*\"([A-Z][A-Z0-9_]*)\"")
LISTED = re.compile(r"^#?\s*([A-Z][A-Z0-9_]*)=", re.MULTILINE)


def test_every_setting_read_from_the_environment_is_in_env_example() -> None:
    read = set(READ.findall((ROOT / "agentbuilder" / "settings.py").read_text()))
    listed = set(LISTED.findall((ROOT / ".env.example").read_text()))
    assert len(read) > 30
    assert read - listed == set()
