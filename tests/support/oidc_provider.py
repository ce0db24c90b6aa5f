"""A real OpenID provider on loopback for the single sign-on tests: panva's certified
`oidc-provider` (npm, tests/js/oidc, installed by `make test`'s `npm ci`) run by Node, with
one confidential client and accounts a test writes (and rewrites between logins); and its
development login form driven over HTTP, for tests that need no browser."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import requests

from tests.live import ROOT

PACKAGE = ROOT / "tests" / "js" / "oidc"
CLIENT_ID = "agentbuilder"


@dataclass
class OidcProvider:
    issuer: str
    client_id: str
    client_secret: str
    accounts_file: Path

    def accounts(self, accounts: dict[str, dict[str, Any]]) -> None:
        """The provider's accounts from now on: {login: claims}."""
        self.accounts_file.write_text(json.dumps(accounts))

    @property
    def settings(self) -> dict[str, str]:
        """Our OIDC_* settings for this provider."""
        return {
            "OIDC_ISSUER": self.issuer,
            "OIDC_CLIENT_ID": self.client_id,
            "OIDC_CLIENT_SECRET": self.client_secret,
        }


@contextmanager
def oidc_provider(
    folder: Path, redirect_uris: list[str], alg: str = "RS256"
) -> Iterator[OidcProvider]:
    """The provider on 127.0.0.1 at a free port, until the block ends."""
    node = shutil.which("node")
    assert node, "Node.js is required (the Makefile's test target and .ci/run install it)"
    assert (PACKAGE / "node_modules" / "oidc-provider").is_dir(), (
        "run `npm ci` in tests/js/oidc (make test does)"
    )
    accounts = folder / "accounts.json"
    accounts.write_text("{}")
    client_secret = secrets.token_urlsafe(32)
    env = {
        **os.environ,
        "OIDC_CLIENT_ID": CLIENT_ID,
        "OIDC_CLIENT_SECRET": client_secret,
        "OIDC_REDIRECT_URIS": ",".join(redirect_uris),
        "OIDC_ACCOUNTS": str(accounts),
        "OIDC_ALG": alg,
    }
    log = (folder / "provider.log").open("w")
    process = subprocess.Popen(  # noqa: S603 - a fixed argument list, no shell
        [node, "provider.mjs"], cwd=PACKAGE, env=env, stdout=subprocess.PIPE, stderr=log, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the first line once it listens; "" if it died
        assert line.startswith("issuer "), f"the provider did not start: {line!r}"
        yield OidcProvider(line.split()[1], CLIENT_ID, client_secret, accounts)
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


FORM = re.compile(r'<form[^>]*action="([^"]+)"')


def provider_login(authorize_url: str, login: str, stop_at: str) -> str:
    """Follow `authorize_url` through the provider's login form (as `login`, any password)
    and its consent form, until a redirect to `stop_at`; that URL."""
    session = requests.Session()
    url, method, data = authorize_url, "GET", None
    for _ in range(12):  # authorize, login, resume, consent, resume, callback: fewer
        response = session.request(method, url, data=data, allow_redirects=False, timeout=30)
        if response.is_redirect:
            location = urljoin(url, response.headers["Location"])
            if location.startswith(stop_at):
                return location
            url, method, data = location, "GET", None
            continue
        assert response.status_code == 200, response.text[:500]
        action = FORM.search(response.text)
        assert action, response.text[:500]
        url, method = urljoin(url, unescape(action.group(1))), "POST"
        fields = {"prompt": "login", "login": login, "password": "any"}
        data = fields if 'name="login"' in response.text else {"prompt": "consent"}
    raise AssertionError(f"no redirect to {stop_at}")
