"""What an OAuth access token costs a request against the API's own JWT (issue 32): the same
callers, the same requests, one uvicorn server, with either kind of Bearer token.

    .venv/bin/python bench/oauth_tokens.py [--quick] [--rounds N] [--db private|shared]

A JWT (POST /v1/auth/token's) is checked by its signature and one read of its user; an
OAuth token (django-oauth-toolkit's, opaque) by one read of its hashed value with its user
and client, and its resource and scopes against the request. Two requests: MCP's
`tools/list` on /v1/mcp (the route OAuth clients call; its token bound to `<base>/v1/mcp`)
and `GET /v1/agents?limit=1` (a token bound to `<base>/v1`). Each side runs in blocks,
JWT then OAuth, then the other way round, so drift on a shared machine falls on both
alike. Prints the server's CPU per request, OAuth's ratio to JWT per request and its
spread over the rounds, and p50 / p99 latency. Asserts nothing about time; exits 1 when an
answer is not 200 or not what the request asks.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from common import (
    Server,
    arguments,
    bench_data,
    cpu_seconds,
    machine,
    percentile,
    prepare,
    table,
)

# common, imported first, has said which package is missing, if one is.
# isort: split
import httpx2 as httpx

CONCURRENCY = 8
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
REDIRECT_URI = "http://127.0.0.1:8765/callback"  # never called: the tokens are made here


@dataclass(frozen=True)
class Request:
    name: str
    method: str
    path: str
    resource: str  # the OAuth token's, below the server's base
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


REQUESTS = (
    Request("MCP tools/list", "POST", "/v1/mcp", "/v1/mcp", LIST_TOOLS, MCP_HEADERS),
    Request("GET /v1/agents", "GET", "/v1/agents?limit=1", "/v1"),
)


@dataclass
class Side:
    requests: int = 0
    server_cpu: float = 0.0
    latencies: list[float] = field(default_factory=list)
    blocks: list[float] = field(default_factory=list)  # CPU ms a request, one per block
    failures: list[str] = field(default_factory=list)

    @property
    def cpu_ms(self) -> float:
        return self.server_cpu / self.requests * 1000 if self.requests else 0.0


def oauth_tokens(users: list[Any], resource: str) -> list[str]:
    """An access token for each user, stored as the token endpoint stores one (hashed),
    bound to `resource` with both scopes, from one public client."""
    from django.db import connection
    from django.utils import timezone
    from oauth2_provider.models import AccessToken, Application, set_token_value

    application = Application.objects.create(
        name="bench",
        redirect_uris=REDIRECT_URI,
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
    )
    raws = []
    for user in users:
        raw = secrets.token_urlsafe(30)
        token = AccessToken(
            user=user,
            application=application,
            expires=timezone.now() + timedelta(hours=2),
            scope="agents:read agents:invoke",
            resource=[resource],
        )
        set_token_value(token, raw)
        token.save()
        raws.append(raw)
    connection.close()
    return raws


def callers(count: int) -> list[Any]:
    from common import CALLER_PREFIX
    from django.contrib.auth import get_user_model
    from django.db import connection

    users = get_user_model().objects.filter(username__startswith=CALLER_PREFIX)
    found = sorted(users, key=lambda u: u.username)[:count]
    connection.close()
    return found


def checked(request: Request, response: httpx.Response) -> str | None:
    """Why `response` is not the answer `request` should have, or None."""
    if response.status_code != 200:
        return f"{request.name}: {response.status_code} {response.text[:300]}"
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    body = json.loads(text)
    if request.path == "/v1/mcp" and not body.get("result", {}).get("tools"):
        return f"{request.name}: no tools in {str(body)[:300]}"
    if request.path.startswith("/v1/agents") and not body.get("agents"):
        return f"{request.name}: no list in {str(body)[:300]}"
    return None


async def block(
    client: httpx.AsyncClient, server: Server, request: Request, tokens: list[str], total: int
) -> Side:
    side = Side(requests=total)
    numbers = iter(range(total))

    async def worker(token: str) -> None:
        headers = {**request.headers, "Authorization": f"Bearer {token}"}
        for _ in numbers:
            started = time.perf_counter()
            response = await client.request(
                request.method, request.path, json=request.body, headers=headers
            )
            side.latencies.append(time.perf_counter() - started)
            if (problem := checked(request, response)) is not None:
                side.failures.append(problem)

    cpu = cpu_seconds(server.pid)
    await asyncio.gather(*(worker(tokens[i % len(tokens)]) for i in range(CONCURRENCY)))
    side.server_cpu = cpu_seconds(server.pid) - cpu
    side.blocks.append(side.cpu_ms)
    return side


def merged(into: Side, part: Side) -> None:
    into.requests += part.requests
    into.server_cpu += part.server_cpu
    into.latencies += part.latencies
    into.blocks += part.blocks
    into.failures += part.failures


async def measure(
    server: Server, request: Request, jwts: list[str], oauths: list[str], rounds: int, n: int
) -> tuple[Side, Side, list[float]]:
    jwt_side, oauth_side, ratios = Side(), Side(), []
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        await block(client, server, request, jwts, n)  # warm both paths up
        await block(client, server, request, oauths, n)
        for number in range(rounds):
            order = [("jwt", jwts), ("oauth", oauths)]
            if number % 2:
                order.reverse()
            parts = {
                name: await block(client, server, request, tokens, n) for name, tokens in order
            }
            merged(jwt_side, parts["jwt"])
            merged(oauth_side, parts["oauth"])
            ratios.append(parts["oauth"].cpu_ms / parts["jwt"].cpu_ms)
    return jwt_side, oauth_side, sorted(ratios)


def rows_of(request: Request, jwt_side: Side, oauth_side: Side, ratios: list[float]) -> list[Any]:
    spread = f"{ratios[0]:.3f} / {percentile(ratios, 50):.3f} / {ratios[-1]:.3f}"
    return [
        [
            request.name,
            name,
            side.requests,
            f"{side.cpu_ms:.3f}",
            f"{side.cpu_ms / jwt_side.cpu_ms:.3f}",
            "" if name == "JWT" else spread,
            f"{percentile(side.latencies, 50) * 1000:.2f}",
            f"{percentile(side.latencies, 99) * 1000:.2f}",
        ]
        for name, side in (("JWT", jwt_side), ("OAuth", oauth_side))
    ]


HEADERS = [
    "request",
    "token",
    "requests",
    "server CPU ms/req",
    "ratio to JWT",
    "rounds' ratio min / p50 / max",
    "p50 ms",
    "p99 ms",
]


def main() -> int:
    parser = arguments(__doc__.splitlines()[0], db="private")
    parser.add_argument("--rounds", type=int, default=0, help="rounds of both sides (default 8)")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 8)
    per_block = 200 if args.quick else 600
    rows: list[Any] = []
    failures: list[str] = []
    db = prepare(args.db)
    server = Server()
    try:
        data = bench_data(callers=CONCURRENCY)
        users = callers(CONCURRENCY)
        server.start(timeout=180)  # a busy machine starts a process slowly
        for request in REQUESTS:
            oauths = oauth_tokens(users, server.url + request.resource)
            jwt_side, oauth_side, ratios = asyncio.run(
                measure(server, request, data.tokens, oauths, rounds, per_block)
            )
            failures += jwt_side.failures + oauth_side.failures
            rows += rows_of(request, jwt_side, oauth_side, ratios)
        failures += server.problems()
    finally:
        server.close()
        db.close()
    print(machine())
    print(f"{rounds} rounds of {per_block} requests a side, {CONCURRENCY} at a time")
    print(table(HEADERS, rows))
    for failure in failures[:10]:
        print("WRONG:", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
