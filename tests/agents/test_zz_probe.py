import json, uuid
import pytest
from django.test import override_settings
from rest_framework.test import APIClient

def show(r):
    ct = r.get("Content-Type")
    try:
        body = r.json()
    except Exception:
        body = r.content[:200]
    print(r.status_code, ct, body, {k: r.get(k) for k in ("WWW-Authenticate", "Retry-After", "Allow")})

def test_probe(owner_client, make_agent, owner):
    c = owner_client
    c.raise_request_exception = False
    a = make_agent()
    cases = [
        ("post", "/v1/agents", b"[" * 100000, "application/json"),
        ("post", "/v1/agents", b'{"name": "x"}', "application/json; charset=rot13"),
        ("post", "/v1/agents", b'{"name": "x"}', "application/json; charset=zlib"),
        ("post", "/v1/agents", b'{"name": "x"}', "application/json; charset=utf-16"),
        ("post", "/v1/agents/lookup", json.dumps({"name": "a\u0000"}).encode(), "application/json"),
        ("post", "/v1/agents", json.dumps({"name": "ab", "agentType": "tool", "description": "a\u0000", "config": {"llmModelId": "local.demo-v1", "tools": [{"toolType": "function", "name": "m", "description": "d", "funcName": "multiply"}]}}).encode(), "application/json"),
        ("post", "/v1/agents", b"", "application/json"),
        ("post", "/v1/agents", b"NaN", "application/json"),
        ("post", "/v1/agents", b"1" * 5000, "application/json"),
        ("post", "/v1/agents", b"\xff\xfe", "application/json"),
        ("post", "/v1/agents", b"{}", "text/plain"),
        ("post", "/v1/agents", b"a=1", "application/x-www-form-urlencoded"),
        ("post", "/v1/agents", b"[1]", "application/json"),
        ("post", "/v1/agents", b'"s"', "application/json"),
        ("post", "/v1/agents", b'null', "application/json"),
        ("patch", f"/v1/agents/{a.pk}", b'[1]', "application/json"),
        ("post", "/v1/auth/token", "&".join(f"f{i}=1" for i in range(1200)).encode(), "application/x-www-form-urlencoded"),
        ("post", "/v1/auth/token", b"grant_type=password&username=a%00&password=x", "application/x-www-form-urlencoded"),
        ("post", "/v1/auth/token", b"grant_type=client_credentials&client_id=a%00&client_secret=x", "application/x-www-form-urlencoded"),
        ("post", "/v1/auth/token", b"grant_type=password&username=owner&password=pw", "application/x-www-form-urlencoded"),
        ("post", "/v1/auth/token", b"grant_type=password&username=owner&password=bad", "application/x-www-form-urlencoded"),
        ("post", "/v1/auth/token", b"grant_type=foo", "application/x-www-form-urlencoded"),
        ("post", "/v1/auth/token", b"grant_type=password", "application/x-www-form-urlencoded"),
        ("post", "/v1/auth/token", b"\xff=\xfe", "application/x-www-form-urlencoded"),
        ("post", "/v1/auth/token", b"{}", "application/x-www-form-urlencoded; charset=zlib"),
        ("post", "/v1/auth/token", b"{}", "multipart/form-data; boundary=x"),
    ]
    for m, p, body, ct in cases:
        print(m, p, body[:40], ct)
        try:
            show(getattr(c, m)(p, body, content_type=ct))
        except Exception as e:
            print("RAISED", type(e), e)
    for p in ["/v1/agents?name=%00", "/v1/agents?offset=1.0", "/v1/agents?offset=" + "9" * 5000, "/v1/agents?limit=0",
              "/v1/agents?offset=", "/v1/agents?agentType=foo", "/v1/models?agentType=foo", f"/v1/agents/{a.pk}/versions/%C2%B2",
              f"/v1/agents/{a.pk}/versions/%D9%A1", f"/v1/agents/{a.pk}/versions/" + "1" * 40, "/v1/nope", "/v1/agents/x/y/z/w",
              f"/v1/agents/{a.pk}/versions/{uuid.uuid4()}", "/v1/agents/" + "%00", "/v1/guardrails?offset=-1", "/v1/agents/types?limit=101",
              "/v1/environments?limit=abc", f"/v1/agents/{a.pk}/versions?offset=x"]:
        print("GET", p)
        try:
            show(c.get(p))
        except Exception as e:
            print("RAISED", type(e), e)
    show(c.put("/v1/agents", {}, format="json"))
    show(APIClient().get("/v1/agents"))
    show(APIClient().get("/v1/agents", HTTP_AUTHORIZATION="Bearer"))
    show(APIClient().get("/v1/agents", HTTP_AUTHORIZATION="Bearer x.y.z"))
    show(APIClient().get("/v1/docs"))
    show(APIClient().get("/v1/schema"))
    show(c.get("/v1/agents", HTTP_X_ENVIRONMENT="a\x00"))
    show(c.post("/v1/agents", b"{}", content_type="application/json", CONTENT_LENGTH="99999999"))
