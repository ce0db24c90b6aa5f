"""The A2A endpoint's JSON-RPC refusals, over plain HTTP: each in an HTTP 200 body with A2A's
code, in the dialect of the method called, naming the params path at fault; and none of them
leaves a run behind."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from django.core.cache import cache
from django.test import override_settings
from rest_framework.test import APIClient

from agents.examples import CALCULATOR, PERSON_EXTRACTOR, SUMMARIZER
from agents.models import Agent, Run
from retrieval.services import document_create
from tests.support.a2a import EMPTY_OUTPUT_TASK

URL = "/v1/a2a/Calculator"
QUERIES_PER_LIST = 5  # token holder, environment, agent and permission, count, page


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


def rpc(client: APIClient, method: str, params: Any, url: str = URL, **extra: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params, **extra}
    answer = client.post(url, body, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()


def legacy(*parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    message = {"kind": "message", "messageId": "m-1", "role": "user", "parts": list(parts)}
    return {"message": message | fields}


def error(body: dict[str, Any]) -> dict[str, Any]:
    assert "result" not in body
    assert body["jsonrpc"] == "2.0"
    return body["error"]  # type: ignore[no-any-return]


@pytest.mark.django_db
def test_a_body_that_is_not_json_is_a_parse_error(owner_client: APIClient, calculator: Agent):
    answer = owner_client.post(URL, b"{nope", content_type="application/json")

    assert answer.status_code == 200
    assert answer.json()["id"] is None
    assert answer.json()["error"]["code"] == -32700


@pytest.mark.django_db
def test_a_batch_or_a_bad_envelope_is_an_invalid_request(
    owner_client: APIClient, calculator: Agent
) -> None:
    batch = owner_client.post(URL, [{"jsonrpc": "2.0", "id": 1}], format="json").json()
    assert error(batch)["code"] == -32600
    assert "batch" in error(batch)["message"]
    old = owner_client.post(URL, {"jsonrpc": "1.0", "id": 2, "method": "tasks/get"}, format="json")
    assert old.status_code == 200
    assert old.json()["id"] == 2
    assert error(old.json())["code"] == -32600


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["tasks/list", "nope"])  # 0.3 has no tasks/list
def test_an_unsupported_method_is_method_not_found(
    owner_client: APIClient, calculator: Agent, method: str
) -> None:
    assert error(rpc(owner_client, method, {}))["code"] == -32601


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({}, ["params", "message"]),
        (legacy({"kind": "text"}), ["params", "message", "parts", 0, "text"]),
        (legacy(), ["params", "message", "parts"]),
        (legacy({"kind": "text", "text": "hi"}, role="agent"), ["params", "message", "role"]),
        (legacy({"kind": "text", "text": "  "}), ["params", "message", "parts"]),
        (legacy({"kind": "text", "text": "hi"}, messageId=""), ["params", "message", "messageId"]),
    ],
)
def test_bad_params_are_invalid_params_naming_the_field_and_start_no_run(
    owner_client: APIClient, calculator: Agent, params: dict[str, Any], path: list[Any]
) -> None:
    refused = error(rpc(owner_client, "message/send", params))

    assert refused["code"] == -32602
    assert refused["data"]["path"] == path
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_a_10_error_carries_the_path_in_the_sdks_error_details(
    owner_client: APIClient, calculator: Agent
) -> None:
    refused = error(rpc(owner_client, "SendMessage", {"message": {"messageId": "m-1"}}))

    assert refused["code"] == -32602
    info, bad_request = refused["data"]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert info["reason"] == "INVALID_PARAMS"
    assert info["metadata"]["path"] == ["params", "message", "role"]
    assert bad_request["fieldViolations"] == [
        {"field": "params.message.role", "description": "the message's role must be user"}
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("message_id", [None, ""])
def test_a_10_send_without_a_message_id_is_invalid_params_naming_it(
    owner_client: APIClient, calculator: Agent, message_id: str | None
) -> None:
    message: dict[str, Any] = {"role": "ROLE_USER", "parts": [{"text": "What is 3 x 5?"}]}
    if message_id is not None:
        message["messageId"] = message_id
    refused = error(rpc(owner_client, "SendMessage", {"message": message}))

    assert refused["code"] == -32602
    assert refused["data"][0]["metadata"]["path"] == ["params", "message", "messageId"]
    assert not Run.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "part"),
    [
        ("SendMessage", {"raw": "UEsDBA==", "mediaType": "application/zip", "filename": "a.zip"}),
        ("SendMessage", {"url": "https://example.invalid/a.png", "mediaType": "image/png"}),
        ("message/send", {"kind": "file", "file": {"uri": "https://example.invalid/a.pdf"}}),
        ("message/send", {"kind": "file", "file": {"bytes": "JVBERi0=", "mimeType": "x/y"}}),
    ],
)
def test_a_part_the_agent_cannot_read_is_content_type_not_supported(
    owner_client: APIClient, calculator: Agent, method: str, part: dict[str, Any]
) -> None:
    text = {"text": "and this"} if method == "SendMessage" else {"kind": "text", "text": "and"}
    if method == "SendMessage":
        params = {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [text, part]}}
    else:
        params = legacy(text, part)
    refused = error(rpc(owner_client, method, params))

    assert refused["code"] == -32005
    data = refused["data"] if method == "message/send" else refused["data"][0]["metadata"]
    assert data["path"] == ["params", "message", "parts", 1]
    assert "Part 1 is a file" in refused["message"]
    assert not Run.objects.exists()


PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(60))


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["SendMessage", "message/send"])
def test_a_file_a_model_reads_is_an_attachment_of_the_message(
    owner_client: APIClient, calculator: Agent, method: str
) -> None:
    data = base64.b64encode(PNG).decode()
    if method == "SendMessage":
        image = {"raw": data, "mediaType": "image/png", "filename": "a.png"}
        params = {
            "message": {
                "messageId": "m-1",
                "role": "ROLE_USER",
                "parts": [{"text": "What is it?"}, image],
            }
        }
    else:
        image = {"kind": "file", "file": {"bytes": data, "mimeType": "image/png", "name": "a.png"}}
        params = legacy({"kind": "text", "text": "What is it?"}, image)
    body = rpc(owner_client, method, params)

    assert "error" not in body, body
    run = Run.objects.get()
    assert run.status == "completed"
    assert run.messages[0]["attachments"] == [
        {"type": "image", "mediaType": "image/png", "name": "a.png", "bytes": len(PNG)}
    ]


@pytest.mark.django_db
def test_a_file_the_agents_model_cannot_read_is_content_type_not_supported(
    owner_client: APIClient, make_agent: Any
) -> None:
    make_agent(
        "Calculator",
        "tool",
        config={**CALCULATOR["config"], "llmModelId": "amazon.nova-micro-v1:0"},
    )
    image = {"raw": base64.b64encode(PNG).decode(), "mediaType": "image/png"}
    message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "What is it?"}, image]}

    with override_settings(LLM_OFFLINE=False):  # the offline model reads images
        refused = error(rpc(owner_client, "SendMessage", {"message": message}))

    assert refused["code"] == -32005
    assert "cannot read images" in refused["message"]
    metadata = refused["data"][0]["metadata"]
    assert metadata["path"] == ["params", "message", "parts", 1]
    run = Run.objects.get()  # recorded, as every protocol records a refused start
    assert (str(run.pk), run.status) == (metadata["taskId"], "failed")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "method",
    [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
    ],
)
def test_the_push_notification_methods_are_refused_where_webhooks_are_off(
    owner_client: APIClient, calculator: Agent, method: str, settings: Any
) -> None:
    settings.WEBHOOKS_ENABLED = False
    refused = error(rpc(owner_client, method, {"id": "t-1", "taskId": "t-1"}))

    assert refused["code"] == -32003
    assert "WEBHOOKS_ENABLED" in refused["message"]


def _token(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({"pageSize": 0}, ["params", "pageSize"]),
        ({"pageSize": 101}, ["params", "pageSize"]),
        ({"historyLength": -1}, ["params", "historyLength"]),
        ({"pageToken": "not-ours"}, ["params", "pageToken"]),
        ({"pageToken": _token(["2026-01-01T00:00:00+00:00", 5])}, ["params", "pageToken"]),
        (
            {"pageToken": _token(["2026-01-01T00:00:00", str(uuid.uuid4())])},
            ["params", "pageToken"],
        ),
        ({"pageToken": _token({"a": 1})}, ["params", "pageToken"]),
        ({"status": "working"}, ["params", "status"]),
    ],
)
def test_list_tasks_refuses_bad_paging_naming_the_field(
    owner_client: APIClient, calculator: Agent, params: dict[str, Any], path: list[Any]
) -> None:
    refused = error(rpc(owner_client, "ListTasks", params))

    assert refused["code"] == -32602
    assert refused["data"][0]["metadata"]["path"] == path


@pytest.mark.django_db
def test_a_task_agent_reads_json_in_a_text_part_and_refuses_a_message_without_inputs(
    owner_client: APIClient, make_agent: Any
) -> None:
    make_agent("summarizer", "task", config=SUMMARIZER["config"])
    url = "/v1/a2a/summarizer"

    done = rpc(
        owner_client, "message/send", legacy({"kind": "text", "text": '{"text": "Hi."}'}), url
    )
    assert done["result"]["status"]["state"] == "completed"
    refused = error(rpc(owner_client, "message/send", legacy({"kind": "text", "text": "Hi."}), url))
    assert refused["code"] == -32602
    assert refused["data"]["path"] == ["params", "message", "parts"]
    listed = error(
        rpc(owner_client, "message/send", legacy({"kind": "data", "data": {"text": 3}}), url)
    )
    assert listed["data"]["path"] == ["params", "message", "parts", 0, "data", "text"]
    assert Run.objects.filter(status="in_progress").count() == 0


@pytest.mark.django_db
def test_tasks_that_are_not_there_are_task_not_found(
    owner_client: APIClient, calculator: Agent
) -> None:
    for task_id in ("not-a-uuid", "6f1c1f7e-1d7b-4cf3-9a57-5f1d8a1c0b11"):
        assert error(rpc(owner_client, "tasks/get", {"id": task_id}))["code"] == -32001
        assert error(rpc(owner_client, "tasks/cancel", {"id": task_id}))["code"] == -32001
    missing = error(rpc(owner_client, "GetTask", {}))
    assert missing["code"] == -32602
    assert missing["data"][0]["metadata"]["path"] == ["params", "id"]


@pytest.mark.django_db
def test_a_task_of_another_agent_is_not_found_on_this_one(
    owner_client: APIClient, calculator: Agent, make_agent: Any
) -> None:
    make_agent("Other", "tool", config=CALCULATOR["config"])
    sent = rpc(owner_client, "message/send", legacy({"kind": "text", "text": "What is 3 x 5?"}))
    task_id = sent["result"]["id"]

    assert rpc(owner_client, "tasks/get", {"id": task_id})["result"]["id"] == task_id
    other = error(rpc(owner_client, "tasks/get", {"id": task_id}, url="/v1/a2a/Other"))
    assert other["code"] == -32001


@pytest.mark.django_db
def test_a_message_to_a_finished_task_is_refused_and_points_to_its_context(
    owner_client: APIClient, calculator: Agent
) -> None:
    sent = rpc(owner_client, "message/send", legacy({"kind": "text", "text": "What is 3 x 5?"}))
    task_id = sent["result"]["id"]

    again = legacy({"kind": "text", "text": "And 4 x 4?"}, taskId=task_id)
    refused = error(rpc(owner_client, "message/send", again))
    assert refused["code"] == -32004
    assert "contextId" in refused["message"]
    unknown = legacy({"kind": "text", "text": "?"}, taskId="6f1c1f7e-1d7b-4cf3-9a57-5f1d8a1c0b11")
    assert error(rpc(owner_client, "message/send", unknown))["code"] == -32001
    assert Run.objects.count() == 1


@pytest.mark.django_db
def test_a_finished_task_reads_back_with_its_history_cut_to_length(
    owner_client: APIClient, calculator: Agent
) -> None:
    sent = rpc(owner_client, "message/send", legacy({"kind": "text", "text": "What is 3 x 5?"}))
    task = sent["result"]

    read = rpc(owner_client, "tasks/get", {"id": task["id"]})["result"]
    assert (read["kind"], read["status"]["state"]) == ("task", "completed")
    assert read["artifacts"][0]["parts"] == task["artifacts"][0]["parts"]
    assert [m["role"] for m in read["history"]] == ["user", "agent"]
    assert read["history"][0]["parts"] == [{"kind": "text", "text": "What is 3 x 5?"}]
    assert read["metadata"]["protocol"] == "a2a"
    last = rpc(owner_client, "tasks/get", {"id": task["id"], "historyLength": 1})["result"]
    assert last["history"] == read["history"][-1:]
    none = rpc(owner_client, "GetTask", {"id": task["id"], "historyLength": 0})["result"]
    assert "history" not in none
    assert none["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.django_db
def test_a_version_is_named_after_the_at_and_an_unknown_agent_is_404(
    owner_client: APIClient, calculator: Agent
) -> None:
    sent = rpc(
        owner_client,
        "message/send",
        legacy({"kind": "text", "text": "What is 3 x 5?"}),
        url=URL + "@1",
    )
    assert Run.objects.get(pk=sent["result"]["id"]).version.number == 1
    card = owner_client.get(URL + "@1/.well-known/agent-card.json").json()
    assert card["url"].endswith("/v1/a2a/Calculator@1")
    missing = owner_client.post("/v1/a2a/Nobody", {"jsonrpc": "2.0"}, format="json")
    assert missing.status_code == 404
    assert owner_client.get("/v1/a2a/Calculator@9/.well-known/agent-card.json").status_code == 404


@pytest.mark.django_db
def test_the_endpoint_is_throttled_per_user_as_the_invoke_routes(
    owner_client: APIClient, calculator: Agent, rates: Callable[..., None]
) -> None:
    rates(user="2/min")
    ask = legacy({"kind": "text", "text": "What is 3 x 5?"})
    for _ in range(2):
        assert "result" in rpc(owner_client, "message/send", ask)

    throttled = owner_client.post(
        URL, {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": ask}, format="json"
    )

    assert throttled.status_code == 429
    assert 1 <= int(throttled["Retry-After"]) <= 61
    assert Run.objects.count() == 2
    cache.clear()


@pytest.mark.django_db
def test_a_streaming_client_without_a_token_gets_a_json_401(calculator: Agent) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {}}

    refused = APIClient().post(URL, body, format="json", HTTP_ACCEPT="text/event-stream")

    assert refused.status_code == 401
    assert refused["Content-Type"] == "application/json"
    assert refused.json()["detail"]


@pytest.mark.django_db
def test_a_structured_answer_is_a_data_part_beside_its_text(
    owner_client: APIClient, make_agent: Any
) -> None:
    make_agent("PersonExtractor", "tool", config=PERSON_EXTRACTOR["config"])
    text = 'Extract the person: "John Doe" is 35 and works as a software engineer.'

    task = rpc(
        owner_client,
        "message/send",
        legacy({"kind": "text", "text": text}),
        url="/v1/a2a/PersonExtractor",
    )["result"]

    text_part, data_part = task["artifacts"][0]["parts"]
    person = Run.objects.get(pk=task["id"]).output
    assert data_part == {"kind": "data", "data": person}
    assert person["name"] == "John Doe"
    assert person["age"] == 35  # an int, as the model gave it, not protobuf's 35.0
    assert json.loads(text_part["text"]) == person


@pytest.mark.django_db
def test_a_rag_answer_carries_its_sources_in_the_artifacts_metadata(
    owner_client: APIClient,
    make_agent: Any,
    env: Any,
    admin_user: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        document_create(
            environment_id=env.pk,
            user=admin_user,
            title="Handbook",
            data=b"The vacation policy grants 25 days of paid leave a year.",
            media_type="text/plain",
        )
    make_agent("helper", "rag")
    ask = legacy({"kind": "text", "text": "How many vacation days do I get?"})

    task = rpc(owner_client, "message/send", ask, url="/v1/a2a/helper")["result"]

    assert task["status"]["state"] == "completed"
    [artifact] = task["artifacts"]
    sources = artifact["metadata"]["customOutputs"]["sourceNodes"]
    assert "25 days" in json.dumps(sources)
    assert artifact["parts"][0]["text"]
    card = owner_client.get("/v1/a2a/helper/.well-known/agent-card.json").json()
    assert [skill["tags"] for skill in card["skills"]] == [["rag"]]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("version", "method", "code"),
    [
        ("0.3", "GetTask", -32009),
        ("1.0", "tasks/get", -32009),
        ("2.0", "GetTask", -32009),
        ("latest", "tasks/get", -32009),
        ("1.2", "GetTask", -32001),  # a later 1.x speaks 1.0's methods
        ("0.3.1", "tasks/get", -32001),
    ],
)
def test_an_a2a_version_header_must_speak_the_methods_dialect(
    owner_client: APIClient, calculator: Agent, version: str, method: str, code: int
) -> None:
    params = {"id": "6f1c1f7e-1d7b-4cf3-9a57-5f1d8a1c0b11"}
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}

    answer = owner_client.post(URL, body, format="json", HTTP_A2A_VERSION=version)

    assert answer.status_code == 200
    assert error(answer.json())["code"] == code


@pytest.mark.django_db
@pytest.mark.parametrize("text", ["a\\u0000b", "\\ud800"])
def test_text_postgresql_cannot_store_is_invalid_params_at_its_part(
    owner_client: APIClient, calculator: Agent, text: str
) -> None:
    raw = (
        '{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": '
        '{"kind": "message", "messageId": "m", "role": "user", "parts": '
        f'[{{"kind": "text", "text": "{text}"}}]}}}}}}'
    )

    refused = error(owner_client.post(URL, raw, content_type="application/json").json())

    assert refused["code"] == -32602
    assert refused["data"]["path"] == ["params", "message", "parts", 0, "text"]
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_nan_is_not_json_and_deep_nesting_is_refused(
    owner_client: APIClient, calculator: Agent
) -> None:
    nan = '{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": NaN}}'
    assert error(owner_client.post(URL, nan, content_type="application/json").json())["code"] == (
        -32700
    )
    deep = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}}
    nested: Any = "x"
    for _ in range(150):
        nested = [nested]
    deep["params"]["metadata"] = nested  # type: ignore[index]
    refused = error(owner_client.post(URL, deep, format="json").json())
    assert refused["code"] == -32602
    assert "deeper than" in refused["message"]


@pytest.mark.django_db
def test_a_body_over_the_apis_limit_is_413(
    owner_client: APIClient, calculator: Agent, settings: Any
) -> None:
    settings.API_MAX_BODY_BYTES = 1000
    ask = legacy({"kind": "text", "text": "x" * 2000})

    answer = owner_client.post(
        URL, {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": ask}, format="json"
    )

    assert answer.status_code == 413
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_list_tasks_reads_a_page_in_a_bounded_number_of_queries(
    owner_client: APIClient, owner: Any, calculator: Agent, django_assert_max_num_queries: Any
) -> None:
    version = calculator.versions.get()

    def runs(count: int) -> None:
        for index in range(count):
            Run.objects.create(
                agent=calculator,
                version=version,
                caller=owner,
                protocol="a2a",
                status="completed",
                thread_id="ctx",
                messages=[{"role": "user", "content": f"q{index}"}],
                output=f"a{index}",
            )

    def page(size: int) -> dict[str, Any]:
        body = rpc(owner_client, "ListTasks", {"pageSize": size, "includeArtifacts": True})
        return body["result"]

    runs(2)
    Run.objects.create(agent=calculator, version=version, caller=owner, protocol="openai")
    # Authentication, the environment, the agent and its permission, the count, the page:
    # the same few whether a page holds 2 tasks or 100.
    with django_assert_max_num_queries(QUERIES_PER_LIST):
        assert len(page(2)["tasks"]) == 2
    runs(98)
    with django_assert_max_num_queries(QUERIES_PER_LIST):
        listed = page(100)
    assert len(listed["tasks"]) == 100
    assert listed["totalSize"] == 100  # the openai run is not an A2A task
    assert listed["nextPageToken"] == ""
    assert [t["artifacts"][0]["parts"][0]["text"] for t in listed["tasks"][:2]] == ["a97", "a96"]


@pytest.mark.django_db
def test_list_tasks_filters_by_status_context_and_status_timestamp(
    owner_client: APIClient, owner: Any, calculator: Agent
) -> None:
    version = calculator.versions.get()
    long_ago = datetime(2020, 1, 1, tzinfo=UTC)

    def run(status: str, thread: str, completed_at: datetime | None) -> str:
        made = Run.objects.create(
            agent=calculator,
            version=version,
            caller=owner,
            protocol="a2a",
            status=status,
            thread_id=thread,
            completed_at=completed_at,
        )
        return str(made.pk)

    old = run("completed", "a", long_ago)
    done = run("completed", "b", datetime.now(UTC))
    failed = run("failed", "a", datetime.now(UTC))
    working = run("in_progress", "b", None)

    def listed(**params: Any) -> list[str]:
        result = rpc(owner_client, "ListTasks", params)["result"]
        return [task["id"] for task in result["tasks"]]

    assert listed() == [working, failed, done, old]
    assert listed(statusTimestampAfter="2021-01-01T00:00:00Z") == [working, failed, done]
    assert listed(status="TASK_STATE_COMPLETED") == [done, old]
    assert listed(status="TASK_STATE_WORKING") == [working]
    assert listed(status="TASK_STATE_INPUT_REQUIRED") == []  # no run is in it
    assert listed(contextId="a") == [failed, old]
    assert listed(contextId="a", status="TASK_STATE_FAILED") == [failed]


@pytest.mark.django_db
def test_an_empty_structured_answer_is_an_empty_data_part_in_both_dialects(
    owner_client: APIClient, make_agent: Any
) -> None:
    make_agent("Acknowledger", "task", config=EMPTY_OUTPUT_TASK)
    url = "/v1/a2a/Acknowledger"
    inputs = {"kind": "data", "data": {"text": "hello"}}
    message = {"messageId": "m-2", "role": "ROLE_USER", "parts": [{"data": {"text": "hello"}}]}

    legacy_task = rpc(owner_client, "message/send", legacy(inputs), url=url)["result"]
    current_task = rpc(owner_client, "SendMessage", {"message": message}, url=url)["result"]["task"]

    # 0.3 answered 500 here (ValueError: Unknown part content type: None), and 1.0 wrote a
    # part with no content at all.
    assert legacy_task["status"]["state"] == "completed"
    assert legacy_task["artifacts"][0]["parts"][1] == {"kind": "data", "data": {}}
    assert current_task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert current_task["artifacts"][0]["parts"][1] == {"data": {}}
    assert Run.objects.get(pk=legacy_task["id"]).output == {}
    # Read back from the recorded run, as tasks/get does.
    got = rpc(owner_client, "tasks/get", {"id": legacy_task["id"]}, url=url)["result"]
    assert got["artifacts"][0]["parts"][1] == {"kind": "data", "data": {}}
