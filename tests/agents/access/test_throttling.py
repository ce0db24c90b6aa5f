from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from agents.access.api_clients import api_client_create


def _guess(password: str, username: str = "owner", **meta: str) -> Any:
    body = {"grant_type": "password", "username": username, "password": password}
    return APIClient().post("/v1/auth/token", body, format="json", **meta)


def _assert_throttled(response: Any, most: int) -> None:
    assert response.status_code == 429, response.json()
    assert response.json()["detail"].startswith("Request was throttled.")
    assert 1 <= int(response["Retry-After"]) <= most + 1
    assert "access_token" not in response.json()


def test_a_forged_x_forwarded_for_buys_no_more_guesses(owner, rates):
    rates(token="5/min", token_account="1000/hour")
    answers = [
        _guess(f"guess-{n}", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}, 198.51.100.{n}").status_code
        for n in range(8)
    ]
    assert answers == [401] * 5 + [429] * 3
    _assert_throttled(_guess("pw", HTTP_X_FORWARDED_FOR="192.0.2.77"), 60)


def test_guesses_at_one_account_from_many_addresses_are_throttled(owner, stranger, rates):
    rates(token="1000/min", token_account="3/hour")
    answers = [_guess(f"guess-{n}", REMOTE_ADDR=f"10.9.0.{n}").status_code for n in range(5)]
    assert answers == [401, 401, 401, 429, 429]
    # Not even the right password, from a fresh address, nor the name in other case.
    _assert_throttled(_guess("pw", REMOTE_ADDR="10.9.1.1"), 3600)
    _assert_throttled(_guess("pw", username="OWNER", REMOTE_ADDR="10.9.1.2"), 3600)
    # Another account, same addresses: untouched.
    stranger.set_password("pw2")
    stranger.save()
    assert _guess("pw2", username="stranger", REMOTE_ADDR="10.9.0.1").status_code == 200


def test_right_credentials_do_not_count_against_the_account(owner, rates):
    rates(token="1000/min", token_account="2/hour")
    assert [_guess("pw").status_code for _ in range(4)] == [200] * 4
    assert [_guess("nope").status_code for _ in range(3)] == [401, 401, 429]


def test_client_secret_guesses_are_throttled_per_client_id(other_env, rates):
    rates(token="1000/min", token_account="2/hour")
    issued = api_client_create(name="ci", environment=other_env)
    body = {"grant_type": "client_credentials", "client_id": issued.client.client_id}
    client = APIClient()
    answers = [
        client.post(
            "/v1/auth/token", {**body, "client_secret": f"s{n}"}, "json", REMOTE_ADDR=f"10.8.{n}.1"
        ).status_code
        for n in range(3)
    ]
    assert answers == [401, 401, 429]
    right = client.post("/v1/auth/token", {**body, "client_secret": issued.secret}, "json")
    _assert_throttled(right, 3600)


def test_forwarded_for_is_believed_from_a_trusted_proxy_only(owner, rates, settings):
    rates(token="2/min", token_account="1000/hour")
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    via_proxy = {"REMOTE_ADDR": "10.0.0.5"}
    for client in ("198.51.100.1", "198.51.100.2"):  # two callers behind one proxy
        forwarded = f"203.0.113.9, {client}, 10.0.0.4"  # the client's claim, then proxies
        assert _guess("x", HTTP_X_FORWARDED_FOR=forwarded, **via_proxy).status_code == 401
        assert _guess("x", HTTP_X_FORWARDED_FOR=forwarded, **via_proxy).status_code == 401
        _assert_throttled(_guess("x", HTTP_X_FORWARDED_FOR=forwarded, **via_proxy), 60)
    # Not from a proxy: the header is the caller's own invention, and ignored.
    direct = {"REMOTE_ADDR": "192.0.2.1"}
    assert _guess("x", HTTP_X_FORWARDED_FOR="198.51.100.3", **direct).status_code == 401
    assert _guess("x", HTTP_X_FORWARDED_FOR="198.51.100.4", **direct).status_code == 401
    _assert_throttled(_guess("x", HTTP_X_FORWARDED_FOR="198.51.100.5", **direct), 60)
