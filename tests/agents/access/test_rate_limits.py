"""Rate limits (agents.access.rate_limits): requestsPerMinute on every authenticated request,
tokensPerMinute before each new run, counted in PostgreSQL (or Redis) so that every
process shares the count; callers without limits untouched."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext

from agentbuilder.errors import RateLimited
from agents.access import rate_limits
from agents.access.api_clients import RateLimits, api_client_create
from agents.access.permissions import Action
from agents.access.rate_limits import (
    Limits,
    RedisCounter,
    caller_limits,
    counter,
    request_admit,
    spent,
    tokens_admit,
    tokens_charge,
)
from agents.access.tokens import token_decode, token_encode, token_holder
from agents.models import APIClient, Environment, RateWindow, Run, UserLimits
from tests.live import (
    platform_port,  # noqa: F401 (the fixture `port`)
    server_process,
)
from tests.support.mcp_server import bearer
from tests.support.processes import free_port, start_redis, stop

ASK = {"messages": [{"role": "user", "content": "What is 3 times 5?"}]}
# 10:00:45 of some day: 15 seconds of its minute are left.
T0 = 1_700_000_000 // 60 * 60 + 45.0
MINUTE = int(T0 // 60)


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request of the test (in this process) in one minute, 15 seconds before its end."""
    monkeypatch.setattr(rate_limits, "clock", lambda: T0)


@pytest.fixture
def client_with(env: Environment, as_user: Any) -> Any:
    def make(**limits: int | None) -> tuple[Any, APIClient]:
        """An API client allowed to read and invoke in `env`, under `limits`; its HTTP
        client and its row."""
        issued = api_client_create(
            name="ci",
            environment=env,
            actions=(Action.READ, Action.INVOKE),
            limits=RateLimits(**limits),
        )
        return as_user(issued.client.service_user, env), issued.client

    return make


def _assert_limited(response: Any, words: str) -> None:
    assert response.status_code == 429, response.content
    assert words in response.json()["detail"], response.json()
    assert response["Retry-After"] == "15"


# ---------------------------------------------------------------- requestsPerMinute


def test_a_client_limit_of_n_lets_n_requests_through_and_refuses_the_next(
    client_with: Any, frozen: None
):
    http, client = client_with(requests_per_minute=3)
    assert [http.get("/v1/agents").status_code for _ in range(3)] == [200] * 3
    _assert_limited(http.get("/v1/agents"), "3 requests per minute for this API client")
    # Every route counts against the one limit.
    _assert_limited(http.get("/v1/models"), "3 requests per minute")
    assert RateWindow.objects.get(key=f"client:{client.pk}:requests").count == 5


def test_a_users_limit_counts_that_user_only(owner: Any, stranger: Any, as_user: Any, frozen: None):
    UserLimits.objects.create(user=owner, requests_per_minute=2)
    mine, theirs = as_user(owner), as_user(stranger)
    assert [mine.get("/v1/agents").status_code for _ in range(2)] == [200, 200]
    _assert_limited(mine.get("/v1/agents"), "2 requests per minute for this user")
    assert [theirs.get("/v1/agents").status_code for _ in range(5)] == [200] * 5


def test_callers_without_limits_are_not_counted_and_cost_no_query(
    owner: Any, stranger: Any, as_user: Any, client_with: Any
):
    UserLimits.objects.create(user=stranger)  # a row with no limit in it is none
    http, _ = client_with()
    for caller in (as_user(owner), as_user(stranger), http):
        with CaptureQueriesContext(connection) as queries:
            assert [caller.get("/v1/agents").status_code for _ in range(30)] == [200] * 30
        statements = [q["sql"] for q in queries.captured_queries]
        assert not [q for q in statements if RateWindow._meta.db_table in q]
        # The limits are read by the statement that reads the token's holder, never alone.
        limits_read = [q for q in statements if UserLimits._meta.db_table in q]
        assert all(APIClient._meta.db_table in q for q in limits_read)
    assert not RateWindow.objects.exists()


def test_the_limits_come_with_the_user_the_token_names(owner: Any):
    UserLimits.objects.create(user=owner, requests_per_minute=7, tokens_per_minute=70)
    token, _ = token_encode(user_id=owner.pk, environment_id=None)
    user = token_holder(token_decode(token))
    assert user is not None
    with CaptureQueriesContext(connection) as queries:
        limits = caller_limits(user)
    assert queries.captured_queries == []
    assert limits == Limits(f"user:{owner.pk}", "user", 7, 70)


def test_a_user_read_without_its_limits_costs_one_query_once(
    owner: Any, django_assert_num_queries: Any
):
    UserLimits.objects.create(user=owner, tokens_per_minute=70)
    user = get_user_model().objects.get(pk=owner.pk)  # as a session's user is read
    with django_assert_num_queries(1):
        assert caller_limits(user) == Limits(f"user:{owner.pk}", "user", None, 70)
    with django_assert_num_queries(0):
        assert caller_limits(user) == Limits(f"user:{owner.pk}", "user", None, 70)


def test_a_new_minute_starts_a_new_count_and_prunes_the_old(db: Any):
    limits = Limits("user:1", "user", 2, None)
    request_admit(limits, now=T0)
    request_admit(limits, now=T0 + 1)
    with pytest.raises(RateLimited) as refused:
        request_admit(limits, now=T0 + 2)
    assert refused.value.retry_after == 13  # 10:00:47 → 10:01:00
    assert spent(limits, "requests", now=T0) == 3
    request_admit(limits, now=T0 + 15)  # 10:01:00: the next minute
    assert spent(limits, "requests", now=T0 + 15) == 1
    assert list(RateWindow.objects.values_list("minute", flat=True)) == [MINUTE + 1]


def test_a_window_row_written_elsewhere_is_counted(db: Any):
    """What another process counted is this one's count too: the table is the count."""
    limits = Limits("client:x", "API client", 5, None)
    RateWindow.objects.create(key="client:x:requests", minute=MINUTE, count=5)
    with pytest.raises(RateLimited):
        request_admit(limits, now=T0)
    request_admit(limits, now=T0 - 60)  # the minute before is another window


def test_retry_after_is_the_seconds_to_the_windows_end(db: Any):
    limits = Limits("user:2", "user", 1, None)
    request_admit(limits, now=MINUTE * 60 + 59.2)
    with pytest.raises(RateLimited) as refused:
        request_admit(limits, now=MINUTE * 60 + 59.5)
    assert refused.value.retry_after == 1
    request_admit(limits, now=(MINUTE + 1) * 60)
    with pytest.raises(RateLimited) as refused:
        request_admit(limits, now=(MINUTE + 1) * 60)
    assert refused.value.retry_after == 60


# ---------------------------------------------------------------- tokensPerMinute


def test_a_run_is_refused_once_the_minutes_tokens_reach_the_limit(
    client_with: Any, make_agent: Any, frozen: None
):
    agent = make_agent("calc")
    http, client = client_with(tokens_per_minute=30)
    url = f"/v1/agents/{agent.pk}/versions/latest/invoke"
    first = http.post(url, ASK, format="json")
    assert first.status_code == 200, first.json()
    used = first.json()["usage"]["total_tokens"]
    assert used > 0
    limits = caller_limits(client.service_user)
    assert limits is not None
    assert spent(limits, "tokens") == used
    runs = Run.objects.count()
    for _ in range(30):  # as many runs as the minute holds: each takes a token at least
        if spent(limits, "tokens") >= 30:
            break
        assert http.post(url, ASK, format="json").status_code == 200
        runs += 1
    refused = http.post(url, ASK, format="json")
    _assert_limited(refused, "30 tokens per minute for this API client")
    assert Run.objects.count() == runs  # refused before any run opened
    # Background runs wait too; reads do not.
    _assert_limited(http.post(url, {**ASK, "background": True}, format="json"), "tokens")
    assert http.get("/v1/runs").status_code == 200


def test_tokens_are_charged_and_admitted_per_minute(db: Any):
    limits = Limits("user:3", "user", None, 100)
    tokens_admit(limits, now=T0)
    assert tokens_charge(limits, 60, now=T0) == 60
    tokens_admit(limits, now=T0)  # 60 of 100: the next run may start, and may go over
    assert tokens_charge(limits, 60, now=T0) == 120
    with pytest.raises(RateLimited) as refused:
        tokens_admit(limits, now=T0 + 5)
    assert refused.value.retry_after == 10
    tokens_admit(limits, now=T0 + 15)


def test_a_user_without_a_token_limit_is_not_charged(owner: Any, as_user: Any, make_agent: Any):
    UserLimits.objects.create(user=owner, requests_per_minute=100)
    agent = make_agent("calc")
    answer = as_user(owner).post(
        f"/v1/agents/{agent.pk}/versions/latest/invoke", ASK, format="json"
    )
    assert answer.status_code == 200
    assert not RateWindow.objects.filter(key__endswith=":tokens").exists()


# ---------------------------------------------------------------- Redis


@pytest.fixture
def redis_url(tmp_path: Path, settings: Any) -> Iterator[str]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (CI installs it: apt-get install redis-server)")
    redis = start_redis(port := free_port(), tmp_path)
    try:
        settings.RATE_LIMITS_REDIS_URL = url = f"redis://127.0.0.1:{port}/0"
        yield url
    finally:
        stop(redis)


def test_with_redis_configured_the_counts_are_kept_there(
    redis_url: str, client_with: Any, frozen: None
):
    assert isinstance(counter(), RedisCounter)
    http, client = client_with(requests_per_minute=2)
    assert [http.get("/v1/agents").status_code for _ in range(2)] == [200, 200]
    _assert_limited(http.get("/v1/agents"), "2 requests per minute")
    assert not RateWindow.objects.exists()
    # A second counter on the same Redis (another process's) sees the same count.
    limits = caller_limits(client.service_user)
    assert limits is not None
    assert RedisCounter(redis_url).read(f"{limits.key}:requests", MINUTE) == 3


def test_redis_windows_roll_over_and_expire(redis_url: str):
    redis_counter = counter()
    assert isinstance(redis_counter, RedisCounter)
    limits = Limits("user:4", "user", 1, 10)
    request_admit(limits, now=T0)
    with pytest.raises(RateLimited) as refused:
        request_admit(limits, now=T0 + 1)
    assert refused.value.retry_after == 14
    request_admit(limits, now=T0 + 15)
    tokens_charge(limits, 10, now=T0)
    with pytest.raises(RateLimited):
        tokens_admit(limits, now=T0)
    tokens_admit(limits, now=T0 + 15)
    ttl = redis_counter.client.ttl(f"agentbuilder:rate:user:4:requests:{MINUTE}")
    assert 0 < ttl <= 120


# ---------------------------------------------------------------- every protocol, every process

LIVE = pytest.mark.django_db(transaction=True, serialized_rollback=True)
TEXT = [{"type": "text", "text": "What is 3 times 5?"}]
A2A_SEND = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "message/send",
    "params": {
        "message": {
            "kind": "message",
            "messageId": "m-1",
            "role": "user",
            "parts": [{"kind": "text", "text": "What is 3 times 5?"}],
        }
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _mcp(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


@LIVE
def test_every_protocol_refuses_a_new_run_past_the_token_limit_with_429(
    port: int, owner: Any, make_agent: Any, frozen: None
):
    agent = make_agent("Calculator")
    UserLimits.objects.create(user=owner, tokens_per_minute=10)
    RateWindow.objects.create(key=f"user:{owner.pk}:tokens", minute=MINUTE, count=10)
    base = f"http://127.0.0.1:{port}/v1"
    problem = "10 tokens per minute for this user"
    with httpx.Client(headers=bearer(owner), timeout=60) as http:
        version = f"{base}/agents/{agent.pk}/versions/latest"
        for name, url, body, message in [
            ("invoke", f"{version}/invoke", ASK, lambda b: b["detail"]),
            ("respond", f"{version}/respond", ASK, lambda b: b["detail"]),
            (
                "process",
                f"{version}/process",
                {"input": [{"type": "message", "role": "user", "content": TEXT}]},
                lambda b: b["error"]["code"] + " " + b["error"]["message"],
            ),
            (
                "openai",
                f"{base}/openai/chat/completions",
                {**ASK, "model": "Calculator"},
                lambda b: b["error"]["code"] + " " + b["error"]["message"],
            ),
            ("a2a", f"{base}/a2a/Calculator", A2A_SEND, lambda b: b["detail"]),
            (
                "mcp",
                f"{base}/mcp",
                _mcp("tools/call", {"name": "Calculator", "arguments": {"message": "3*5"}}),
                lambda b: b["detail"],
            ),
        ]:
            headers = MCP_HEADERS if name == "mcp" else {}
            answer = http.post(url, json=body, headers=headers)
            assert answer.status_code == 429, (name, answer.text)
            assert answer.headers["Retry-After"] == "15", name
            assert problem in message(answer.json()), (name, answer.json())
        process = http.post(
            f"{version}/process",
            json={"input": [{"type": "message", "role": "user", "content": TEXT}]},
        )
        assert process.json()["error"]["code"] == "rate_limited"
        openai = http.post(f"{base}/openai/chat/completions", json={**ASK, "model": "Calculator"})
        assert openai.json()["error"]["type"] == "rate_limit_error"
        # What starts no run is not refused: listing the MCP tools.
        listed = http.post(f"{base}/mcp", json=_mcp("tools/list", {}), headers=MCP_HEADERS)
        assert listed.status_code == 200, listed.text
    assert not Run.objects.exists()


@LIVE
def test_requests_per_minute_count_mcp_and_a2a_requests_too(
    port: int, owner: Any, make_agent: Any, frozen: None
):
    make_agent("Calculator")
    UserLimits.objects.create(user=owner, requests_per_minute=2)
    base = f"http://127.0.0.1:{port}/v1"
    with httpx.Client(headers=bearer(owner), timeout=60) as http:
        listed = http.post(f"{base}/mcp", json=_mcp("tools/list", {}), headers=MCP_HEADERS)
        assert listed.status_code == 200, listed.text
        card = http.get(f"{base}/a2a/Calculator/.well-known/agent-card.json")
        assert card.status_code == 200, card.text
        for refused in (
            http.post(f"{base}/mcp", json=_mcp("tools/list", {}), headers=MCP_HEADERS),
            http.post(f"{base}/a2a/Calculator", json=A2A_SEND),
        ):
            assert refused.status_code == 429, refused.text
            assert refused.headers["Retry-After"] == "15"
            assert "2 requests per minute for this user" in refused.json()["detail"]


@LIVE
def test_requests_are_counted_across_server_processes(port: int, owner: Any, tmp_path: Path):
    UserLimits.objects.create(user=owner, requests_per_minute=4)
    with (
        server_process(tmp_path / "server.log") as other,
        httpx.Client(headers=bearer(owner), timeout=60) as http,
    ):
        for _ in range(2):  # once more if a minute ended in between: the count started over
            RateWindow.objects.all().delete()
            minute = time.time() // 60
            answers = [
                http.get(f"http://127.0.0.1:{server}/v1/agents").status_code
                for server in (port, other.port) * 3
            ]
            if time.time() // 60 == minute:
                break
        assert answers == [200, 200, 200, 200, 429, 429], other.output()
    assert RateWindow.objects.get().count == 6


@pytest.mark.parametrize("bad", [0, -1, 10**9 + 1])
def test_the_database_refuses_a_limit_the_forms_did_not_check(env: Environment, bad: int):
    with pytest.raises(IntegrityError):
        api_client_create(name="ci", environment=env, limits=RateLimits(tokens_per_minute=bad))
    assert not APIClient.objects.exists()
    assert not get_user_model().objects.filter(username__startswith="svc-").exists()
