"""boto3 clients, built once per (service, retries, timeout): they are thread-safe and costly.

Region, credentials and endpoints come from the usual AWS settings boto3 reads
(`AWS_DEFAULT_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, profiles …),
plus `AWS_REGION`, which the other AWS SDKs honour and boto3 alone ignores.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

CONNECT_TIMEOUT = 5.0
# One client serves every concurrent stream of its profile; urllib3 would otherwise open
# connections past its pool size and throw them away after each call.
MAX_POOL_CONNECTIONS = 64


def client(service: str, *, max_retries: int, timeout: float) -> Any:
    """The shared client of `service`; `timeout` bounds each socket read, not the call."""
    return _build(service, max(0, int(max_retries)), float(timeout))


def clear_cache() -> None:
    """Forget built clients, so the next call reads the environment again (tests)."""
    _build.cache_clear()


@functools.lru_cache(maxsize=64)
def _build(service: str, max_retries: int, timeout: float) -> Any:
    config = Config(
        retries={"total_max_attempts": max_retries + 1, "mode": "standard"},
        read_timeout=timeout,
        connect_timeout=min(CONNECT_TIMEOUT, timeout),
        max_pool_connections=MAX_POOL_CONNECTIONS,
    )
    # A session per client: boto3's default session is not safe to build clients from
    # in several threads at once.
    session = boto3.session.Session(region_name=os.environ.get("AWS_REGION") or None)
    return session.client(service, config=config)


def client_error_text(exc: ClientError) -> str:
    """What AWS said, for a person: "Code: message (HTTP 500, 3 attempts)"."""
    error = exc.response.get("Error", {})
    meta = exc.response.get("ResponseMetadata", {})
    attempts = meta.get("RetryAttempts", 0) + 1
    return (
        f"{error.get('Code', 'error')}: {error.get('Message', '')} "
        f"(HTTP {meta.get('HTTPStatusCode', '?')}, {attempts} attempt{'s' if attempts > 1 else ''})"
    )
