"""Throttles that know who is calling: the client's address trusts forwarding headers only
from the proxies the operator listed (TRUSTED_PROXIES), and wrong credentials are counted
per account as well as per address, so neither a forged X-Forwarded-For nor a pool of
addresses buys more guesses at one password. Beside them, the rate limits an API client or
a user may carry (CallerRateThrottle).
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from rest_framework import throttling
from rest_framework.exceptions import Throttled
from rest_framework.request import Request

from agents.access.rate_limits import caller_limits, request_admit

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@functools.cache
def _trusted(proxies: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(p.strip(), strict=False) for p in proxies if p.strip())


def _is_trusted(address: str, networks: tuple[IPNetwork, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_address(request: Any) -> str:
    """The caller's address: REMOTE_ADDR, or, when that is a trusted proxy, the nearest
    address in X-Forwarded-For that is not one (each proxy appends the peer it saw, so
    everything left of the first untrusted hop is the client's to invent)."""
    remote = str(request.META.get("REMOTE_ADDR") or "")
    networks = _trusted(tuple(settings.TRUSTED_PROXIES))
    if not networks or not _is_trusted(remote, networks):
        return remote
    hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    for hop in reversed([h for h in hops if h]):
        if not _is_trusted(hop, networks):
            return hop
    return remote


class AddressMixin:
    def get_ident(self, request: Request) -> str:
        return client_address(request)


class UserRateThrottle(AddressMixin, throttling.UserRateThrottle):
    """Per user; a request without one (a route open to anyone) per address."""


class AnonRateThrottle(AddressMixin, throttling.AnonRateThrottle):
    """Per address, requests without a user: the routes anyone may call (the OpenAPI
    document, the docs page, public agent cards) get a budget of their own, smaller than a
    user's, so a flood of them from one address is refused before it costs much."""


class ScopedRateThrottle(AddressMixin, throttling.ScopedRateThrottle):
    """Per address (or user) and the view's `throttle_scope`."""


class CallerRateThrottle(throttling.BaseThrottle):
    """The requestsPerMinute of the API client or user calling, counted across processes
    (agents.access.rate_limits); nothing to do for a caller without one, and a request
    without a user is the address throttles' to count."""

    def allow_request(self, request: Request, view: Any) -> bool:
        user = request.user
        if user is None or not user.is_authenticated:
            return True
        limits = caller_limits(user)
        if limits is not None:
            # Raises RateLimited rather than answering False: its 429 names the limit, and
            # its Retry-After is the window's end, not DRF's guess from a history.
            request_admit(limits)
        return True


class AccountThrottle(throttling.SimpleRateThrottle):
    """Failed credential checks of one account (username or client id), from anywhere."""

    scope = "token_account"

    def __init__(self, account: str) -> None:
        super().__init__()
        limit, window = self.parse_rate(self.rate)
        self.limit, self.window = limit, window or 1  # no rate (None): no limit, as in DRF
        # Hashed: a username is not a safe cache key (length, characters); folded so that
        # case variants of one name share a budget.
        ident = hashlib.sha256(account.casefold().encode()).hexdigest()
        self.account_key = self.cache_format % {"scope": self.scope, "ident": ident}

    def get_cache_key(self, request: Request, view: Any) -> str:
        return self.account_key

    def attempt(self) -> None:
        """Count an attempt now, before the (slow) password check, so a burst of parallel
        guesses is counted too; raises Throttled once the account has no attempts left."""
        self.now = self.timer()
        if self.limit is None:
            return
        recent = [t for t in self.cache.get(self.account_key, []) if t > self.now - self.window]
        if len(recent) >= self.limit:
            # Until enough of the oldest attempts leave the window (newest first).
            freed_at = (recent[self.limit - 1] if self.limit else self.now) + self.window
            raise Throttled(wait=max(freed_at - self.now, 0.0))
        self.cache.set(self.account_key, [self.now, *recent], self.window)

    def forgive(self) -> None:
        """The credentials were right: only failures count against an account."""
        history = list(self.cache.get(self.account_key, []))
        if self.now in history:
            history.remove(self.now)
            self.cache.set(self.account_key, history, self.window)


@contextmanager
def credential_attempt(account: str) -> Iterator[None]:
    """Around a credential check: Throttled when `account` has failed too often lately; a
    check that raises (wrong credentials) stays counted."""
    throttle = AccountThrottle(account)
    throttle.attempt()
    yield
    throttle.forgive()
