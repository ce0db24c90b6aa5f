"""Rate limits of API clients and users (docs/api.md#rate-limits): `requestsPerMinute`
counts every authenticated /v1 request (`request_admit`, from the throttle
agents.access.throttling.CallerRateThrottle); `tokensPerMinute` is charged with a run's
tokens when it ends (`TokensCharged`, part of the run's spend gate) and a new run is refused
while the minute's tokens have reached it (`tokens_admit`, from agents.runs.start).

Windows are fixed minutes of Unix time, counted across processes: in Redis (INCRBY and
EXPIRE) when RATE_LIMITS_REDIS_URL names one, else in PostgreSQL (one upsert into
`RateWindow`, each caller's earlier minutes deleted at the first request of a new one).
A caller without limits costs nothing: its API client or its `UserLimits` row was read with
the user by the authentication (agents.access.tokens).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from django.conf import settings
from django.core.signals import setting_changed
from django.db import connection
from django.dispatch import receiver

from agentbuilder.errors import RateLimited
from agentbuilder.users import User
from agents.llm.base import Usage
from agents.models import RateWindow

WINDOW_SECONDS = 60
Measure = Literal["requests", "tokens"]
# Where the time of a request comes from: the functions below take a `now` of their own, and
# tests of the HTTP path set this, so that no test depends on where in a minute it runs.
clock: Callable[[], float] = time.time


@dataclass(frozen=True)
class Limits:
    """A caller's limits (None: no limit) and the key its counts are kept under."""

    key: str  # `client:<id>` or `user:<id>`
    holder: str  # "API client" or "user", for the refusal's words
    requests_per_minute: int | None
    tokens_per_minute: int | None


def caller_limits(user: User) -> Limits | None:
    """The limits of `user`: its API client's if it is one, else its own `UserLimits`;
    None when it has none. No query when the authentication loaded both relations (a Bearer
    token's), one otherwise (a session's user), after which they are loaded."""
    _load_relations(user)
    # A missing one-to-one raises RelatedObjectDoesNotExist, an AttributeError.
    client = getattr(user, "api_client", None)
    if client is not None:
        key, holder, row = f"client:{client.pk}", "API client", client
    else:
        key, holder, row = f"user:{user.pk}", "user", getattr(user, "rate_limits", None)
    if row is None or (row.requests_per_minute is None and row.tokens_per_minute is None):
        return None
    return Limits(key, holder, row.requests_per_minute, row.tokens_per_minute)


def _load_relations(user: User) -> None:
    relations = (User.api_client.related, User.rate_limits.related)
    if all(relation.is_cached(user) for relation in relations):
        return
    loaded = User.objects.select_related("api_client", "rate_limits").get(pk=user.pk)
    for relation in relations:
        relation.set_cached_value(user, relation.get_cached_value(loaded, None))


def request_admit(limits: Limits, *, now: float | None = None) -> None:
    """Count one request; raises RateLimited when it goes past requestsPerMinute (the
    refused ones count too: a client that keeps knocking stays refused to the minute's end)."""
    limit = limits.requests_per_minute
    if limit is None:
        return
    minute, retry_after = _window(now)
    if counter().add(f"{limits.key}:requests", minute, 1) > limit:
        raise RateLimited(
            f"Rate limit reached: {limit} requests per minute for this {limits.holder}.",
            retry_after,
        )


def tokens_admit(limits: Limits, *, now: float | None = None) -> None:
    """Raises RateLimited while the minute's tokens have reached tokensPerMinute."""
    limit = limits.tokens_per_minute
    if limit is None:
        return
    minute, retry_after = _window(now)
    if counter().read(f"{limits.key}:tokens", minute) >= limit:
        raise RateLimited(
            f"Rate limit reached: {limit} tokens per minute for this {limits.holder}; "
            "new runs wait for the next minute.",
            retry_after,
        )


def tokens_charge(limits: Limits, tokens: int, *, now: float | None = None) -> int:
    """Add a run's `tokens` to the caller's minute; the minute's tokens after."""
    minute, _ = _window(now)
    return counter().add(f"{limits.key}:tokens", minute, tokens)


def spent(limits: Limits, measure: Measure, *, now: float | None = None) -> int:
    """What the caller has spent of `measure` in the minute of `now`."""
    return counter().read(f"{limits.key}:{measure}", _window(now)[0])


def _window(now: float | None) -> tuple[int, int]:
    """The minute of `now` (Unix time // 60) and the whole seconds until it ends (1 to 60)."""
    at = clock() if now is None else now
    minute = int(at // WINDOW_SECONDS)
    return minute, max(1, math.ceil((minute + 1) * WINDOW_SECONDS - at))


class TokensCharged:
    """The part of a run's spend gate (agents.runtime.spec.SpendGate) that charges its
    model calls' tokens to its caller's minute, for callers with a tokensPerMinute: kept
    in memory as the calls end and charged once, in the hop that writes the run's end, so
    a run of any length costs one statement, and a run resumed after an approval charges
    only its own calls. A run never stops for it: new runs wait (`tokens_admit`)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.tokens = 0

    async def before_call(self) -> None:
        return None

    async def after_call(self, model: str, usage: Usage, cost_usd: float | None) -> None:
        self.tokens += usage.input_tokens + usage.output_tokens

    def settle(self) -> None:
        tokens, self.tokens = self.tokens, 0
        if tokens > 0:
            tokens_charge(self.limits, tokens)


# ---------------------------------------------------------------- counters


class Counter(Protocol):
    def add(self, key: str, minute: int, amount: int) -> int:
        """Add `amount` to `key`'s count in `minute`; the count after."""

    def read(self, key: str, minute: int) -> int:
        """`key`'s count in `minute`, 0 if nothing was counted."""


class PostgresCounter:
    """Counts in the `RateWindow` table, one row a caller and measure and minute."""

    def add(self, key: str, minute: int, amount: int) -> int:
        with connection.cursor() as cursor:
            cursor.execute(_sql()["add"], [key, minute, amount])
            count, inserted = cursor.fetchone()
            if inserted:  # the minute's first: the caller's earlier ones are over
                cursor.execute(_sql()["prune"], [key, minute])
        return int(count)

    def read(self, key: str, minute: int) -> int:
        with connection.cursor() as cursor:
            cursor.execute(_sql()["read"], [key, minute])
            row = cursor.fetchone()
        return int(row[0]) if row else 0


@functools.cache
def _sql() -> dict[str, str]:
    quote = connection.ops.quote_name
    table = quote(RateWindow._meta.db_table)
    key, minute, count = quote("key"), quote("minute"), quote("count")
    # Names from the model; the values are parameters. `xmax = 0`: this statement inserted
    # the row rather than updated it (PostgreSQL's system column).
    return {
        "add": f"""
            INSERT INTO {table} ({key}, {minute}, {count}) VALUES (%s, %s, %s)
            ON CONFLICT ({key}, {minute}) DO UPDATE SET {count} = {table}.{count} + EXCLUDED.{count}
            RETURNING {count}, (xmax = 0) AS inserted
        """,  # noqa: S608
        "prune": f"DELETE FROM {table} WHERE {key} = %s AND {minute} < %s",  # noqa: S608
        "read": f"SELECT {count} FROM {table} WHERE {key} = %s AND {minute} = %s",  # noqa: S608
    }


class RedisCounter:
    """Counts in Redis, one key a caller and measure and minute, expiring after two."""

    def __init__(self, url: str) -> None:
        import redis  # installed with the project (requirements.txt); only this counter needs it

        self.client: Any = redis.Redis.from_url(url)

    def add(self, key: str, minute: int, amount: int) -> int:
        name = _redis_key(key, minute)
        pipeline = self.client.pipeline()  # MULTI/EXEC: no count is left without its expiry
        pipeline.incrby(name, amount)
        pipeline.expire(name, 2 * WINDOW_SECONDS)
        count, _ = pipeline.execute()
        return int(count)

    def read(self, key: str, minute: int) -> int:
        return int(self.client.get(_redis_key(key, minute)) or 0)


def _redis_key(key: str, minute: int) -> str:
    return f"agentbuilder:rate:{key}:{minute}"


@functools.cache
def counter() -> Counter:
    """The process's counter: Redis's when RATE_LIMITS_REDIS_URL is set, else PostgreSQL's."""
    url = settings.RATE_LIMITS_REDIS_URL
    return RedisCounter(url) if url else PostgresCounter()


@receiver(setting_changed)
def _forget_counter(*, setting: str, **kwargs: Any) -> None:
    if setting == "RATE_LIMITS_REDIS_URL":  # a test's override_settings
        counter.cache_clear()
