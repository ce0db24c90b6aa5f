"""Signing keys: the dev set-up makes its own and keeps it, a deployment must set a real one,
and what the old fixed key signed or sealed is worthless. Settings are read once per
process, so each case starts a fresh interpreter with an environment of its own."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from agentbuilder.dev_secret_key import dev_secret_key

ROOT = Path(__file__).resolve().parent.parent
# The key `make run` signed tokens with until it made its own: published, so anyone could
# forge an admin's token with it.
OLD_DEV_KEY = "dev-only-insecure-key-never-use-in-production"
REAL_KEY = "k3y-" + "x7Qp2Lm9" * 7  # long and varied enough for `check --deploy`
SECRETS = ("SECRET_KEY", "JWT_SIGNING_KEY", "MCP_SECRETS_KEY", "ADMIN_PASSWORD")


def run(args: list[str], **environ: str) -> subprocess.CompletedProcess[str]:
    """Run python `args` in the project with only `environ` (and PATH) set."""
    clean = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "agentbuilder.settings",
        # Never connected to: without it settings would start the embedded server.
        "DATABASE_URL": "postgres://unused@127.0.0.1:9/unused",
        "LLM_OFFLINE": "true",
        "DEBUG": "",
        # Set empty, so a developer's .env cannot fill them in (read_env never overwrites).
        **{name: "" for name in SECRETS},
        **{f"{name}_FILE": "" for name in SECRETS},
    }
    return subprocess.run(  # noqa: S603
        [sys.executable, *args],
        cwd=ROOT,
        env={**clean, **environ},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def django(code: str, **environ: str) -> Any:
    """The JSON that `code` prints after django.setup() in a fresh interpreter."""
    result = run(["-c", f"import django, json\ndjango.setup()\n{code}"], **environ)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def setting_values(*names: str, **environ: str) -> dict[str, Any]:
    """The settings `names` that a process started with `environ` sees."""
    values = f"{{n: getattr(settings, n, None) for n in {names!r}}}"
    return django(f"from django.conf import settings\nprint(json.dumps({values}))", **environ)


def dev(var_dir: Path) -> dict[str, str]:
    """The environment of `make run`, without a SECRET_KEY."""
    return {"DEBUG": "true", "VAR_DIR": str(var_dir)}


# ---------------------------------------------------------------- a deployment


def test_start_without_debug_and_without_secret_key_fails_saying_what_to_set(
    tmp_path: Path,
) -> None:
    result = run(["manage.py", "check"], VAR_DIR=str(tmp_path))

    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY (or SECRET_KEY_FILE) must be set" in result.stderr
    assert "secrets.token_urlsafe" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["SECRET_KEY", "MCP_SECRETS_KEY"])
def test_a_placeholder_key_is_refused_outside_debug(name: str) -> None:
    environ = {"SECRET_KEY": REAL_KEY, name: "change-me-in-production"}

    result = run(["manage.py", "check"], DEBUG="false", **environ)

    assert result.returncode != 0
    assert f"{name} has 23 characters; a key needs at least 32" in result.stderr


def test_keys_come_from_files_and_the_other_keys_default_to_secret_key(tmp_path: Path) -> None:
    key_file = tmp_path / "secret_key"
    key_file.write_text(REAL_KEY + "\n")

    values = setting_values(
        "SECRET_KEY",
        "JWT_SIGNING_KEY",
        "MCP_SECRETS_KEY",
        "ADMIN_PASSWORD",
        DEBUG="false",
        SECRET_KEY_FILE=str(key_file),
        VAR_DIR=str(tmp_path / "var"),
    )

    assert values == {
        "SECRET_KEY": REAL_KEY,
        "JWT_SIGNING_KEY": REAL_KEY,
        "MCP_SECRETS_KEY": REAL_KEY,
        # devsetup run here makes a superuser without a usable password, not admin/admin.
        "ADMIN_PASSWORD": None,
    }
    assert not (tmp_path / "var").exists()


def test_mcp_key_and_its_fallbacks_come_from_files(tmp_path: Path) -> None:
    (tmp_path / "mcp").write_text("m" * 40)
    (tmp_path / "old").write_text("old-key-one\nold-key-two\n")

    values = setting_values(
        "MCP_SECRETS_KEY",
        "MCP_SECRETS_KEY_FALLBACKS",
        DEBUG="false",
        SECRET_KEY=REAL_KEY,
        MCP_SECRETS_KEY_FILE=str(tmp_path / "mcp"),
        MCP_SECRETS_KEY_FALLBACKS_FILE=str(tmp_path / "old"),
    )

    assert values == {
        "MCP_SECRETS_KEY": "m" * 40,
        "MCP_SECRETS_KEY_FALLBACKS": ["old-key-one", "old-key-two"],
    }


def test_an_unreadable_secret_file_fails_naming_the_variable(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-file"

    result = run(["manage.py", "check"], DEBUG="false", SECRET_KEY_FILE=str(missing))

    assert result.returncode != 0
    assert f"ImproperlyConfigured: SECRET_KEY_FILE={missing} cannot be read" in result.stderr


# ---------------------------------------------------------------- HTTPS


def deploy_warnings(**environ: str) -> set[str]:
    result = run(
        ["manage.py", "check", "--deploy"],
        DEBUG="false",
        SECRET_KEY=REAL_KEY,
        ALLOWED_HOSTS="agents.example.com",
        **environ,
    )
    assert result.returncode == 0, result.stderr
    return set(re.findall(r"\((security\.W\d+)\)", result.stderr + result.stdout))


def test_check_deploy_on_the_readme_settings_warns_only_about_redirect_and_hsts() -> None:
    # The two the README's Deployment section explains: the TLS proxy redirects and sets
    # HSTS, or SECURE_SSL_REDIRECT and SECURE_HSTS_SECONDS make Django do it.
    assert deploy_warnings() == {"security.W004", "security.W008"}


def test_check_deploy_is_clean_when_django_redirects_and_sends_hsts() -> None:
    warnings = deploy_warnings(
        SECURE_SSL_REDIRECT="true",
        SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto",
        SECURE_HSTS_SECONDS="31536000",
        SECURE_HSTS_INCLUDE_SUBDOMAINS="true",
        SECURE_HSTS_PRELOAD="true",
    )

    assert warnings == set()


def test_a_proxy_header_is_trusted_only_when_named() -> None:
    names = ("SECURE_PROXY_SSL_HEADER", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE")
    unset = setting_values(*names, DEBUG="false", SECRET_KEY=REAL_KEY)
    named = setting_values(
        *names, DEBUG="false", SECRET_KEY=REAL_KEY, SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto"
    )

    assert unset == {
        "SECURE_PROXY_SSL_HEADER": None,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
    }
    assert named["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


# ---------------------------------------------------------------- the dev set-up


def test_dev_start_makes_a_private_random_key_once_and_reuses_it(tmp_path: Path) -> None:
    first = setting_values("SECRET_KEY", "ADMIN_PASSWORD", **dev(tmp_path / "var"))
    again = setting_values("SECRET_KEY", **dev(tmp_path / "var"))
    elsewhere = setting_values("SECRET_KEY", **dev(tmp_path / "other"))

    key_file = tmp_path / "var" / "secret_key"
    assert key_file.read_text().strip() == first["SECRET_KEY"]
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(first["SECRET_KEY"]) >= 50
    assert again["SECRET_KEY"] == first["SECRET_KEY"]
    assert elsewhere["SECRET_KEY"] != first["SECRET_KEY"]
    password_file = tmp_path / "var" / "admin_password"
    assert password_file.read_text().strip() == first["ADMIN_PASSWORD"]
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    assert first["ADMIN_PASSWORD"] != first["SECRET_KEY"]
    assert len(first["ADMIN_PASSWORD"]) >= 50


OLD_KEY_CHECKS = f"""
import jwt
from datetime import UTC, datetime, timedelta
from agents.mcp_registry.secrets import HeadersUnreadable, _fernet, decrypt_headers, encrypt_headers
from django.conf import settings
from agents.access.tokens import token_decode

now = datetime.now(UTC)
claims = {{
    "iss": "agentbuilder", "sub": "1", "iat": now, "exp": now + timedelta(hours=1), "crd": "c",
}}
forged = jwt.encode(claims, {OLD_DEV_KEY!r}, algorithm="HS256")
own = jwt.encode(claims, settings.JWT_SIGNING_KEY, algorithm="HS256")
try:
    token_decode(forged)
    forged_result = "accepted"
except jwt.InvalidSignatureError:
    forged_result = "refused"
sealed = _fernet({OLD_DEV_KEY!r}).encrypt(b'{{"Authorization": "Bearer x"}}').decode()
try:
    decrypt_headers(sealed)
    sealed_result = "opened"
except HeadersUnreadable:
    sealed_result = "unreadable"
print(json.dumps({{
    "forged": forged_result,
    "own": token_decode(own).user_id,
    "sealed": sealed_result,
    "own_sealed": decrypt_headers(encrypt_headers({{"X-Key": "v"}})),
}}))
"""


@pytest.fixture(scope="module")
def old_key_checks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return django(OLD_KEY_CHECKS, **dev(tmp_path_factory.mktemp("var")))


def test_dev_start_refuses_a_token_signed_with_the_old_fixed_key(
    old_key_checks: dict[str, Any],
) -> None:
    assert old_key_checks["forged"] == "refused"
    assert old_key_checks["own"] == 1


def test_dev_start_cannot_open_mcp_headers_sealed_with_the_old_fixed_key(
    old_key_checks: dict[str, Any],
) -> None:
    assert old_key_checks["sealed"] == "unreadable"
    assert old_key_checks["own_sealed"] == {"X-Key": "v"}


def test_processes_starting_together_all_keep_the_first_key(tmp_path: Path) -> None:
    path = tmp_path / "var" / "secret_key"
    keys: list[str] = []
    threads = [threading.Thread(target=lambda: keys.append(dev_secret_key(path))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(keys) == 8
    assert set(keys) == {path.read_text().strip()}
    assert [p.name for p in path.parent.iterdir()] == ["secret_key"]


def test_an_emptied_dev_key_file_fails_rather_than_signing_with_nothing(tmp_path: Path) -> None:
    path = tmp_path / "secret_key"
    path.write_text("\n")

    with pytest.raises(ImproperlyConfigured, match="is empty: delete it"):
        dev_secret_key(path)
