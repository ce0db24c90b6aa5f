"""A run's stored messages and steps as the admin's chat items, usage rows and hits
(agents/admin/conversation.py): no database."""

from __future__ import annotations

from decimal import Decimal

from agents.admin.conversation import (
    Blocked,
    Bubble,
    Failure,
    ToolUse,
    UsageRow,
    chat,
    hits,
    input_preview,
    usage_rows,
)

CALL = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": 1}'}}


def test_a_tool_call_is_shown_with_its_result_and_one_left_unanswered_says_so() -> None:
    messages = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Hi", "attachments": [{"type": "image", "name": "a.png"}]},
        {"role": "assistant", "content": "", "tool_calls": [CALL, {**CALL, "id": "c2"}]},
        {"role": "tool", "content": '{"ok": true}', "tool_call_id": "c1", "name": "lookup"},
    ]

    assert chat(messages, []) == [
        Bubble("system", "Be terse."),
        Bubble("user", "Hi", ("a.png",)),
        ToolUse("lookup", '{\n  "q": 1\n}', '{\n  "ok": true\n}'),
        ToolUse("lookup", '{\n  "q": 1\n}', None),
    ]


def test_a_block_and_a_failure_come_before_the_answer_or_last() -> None:
    block = {
        "type": "guardrail",
        "name": "G",
        "stage": "output",
        "action": "BLOCKED",
        "detected": {"kind": None, "detector": "rules", "score": 1.0},
    }
    answered = chat(
        [{"role": "user", "content": "x"}, {"role": "assistant", "content": "Sorry."}], [block]
    )
    assert [type(item) for item in answered] == [Bubble, Blocked, Bubble]

    failed = chat([{"role": "user", "content": "x"}], [], {"code": "timeout", "message": "late"})
    assert failed == [Bubble("user", "x"), Failure("timeout", "late")]


def test_the_input_preview_is_the_first_user_message_flattened_and_cut() -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "a\n b " * 30}]
    preview = input_preview(messages, 20)
    assert preview == "a b a b a b a b a b…"
    assert input_preview([{"role": "assistant", "content": "x"}]) == ""


def test_usage_is_a_row_per_model_or_the_run_s_total_for_an_older_run() -> None:
    by_model = {"m": {"input_tokens": 5, "output_tokens": 2, "cost_usd": 0.25}}
    assert usage_rows(by_model, {}) == [UsageRow("m", 5, 2, 0, Decimal("0.25"))]
    assert usage_rows({}, {"input_tokens": 3, "output_tokens": 1}) == [UsageRow("", 3, 1, 0, None)]
    assert usage_rows({}, {}) == []


def test_hits_carry_their_document_s_title_and_passage() -> None:
    steps = [
        {"type": "retrieval", "hits": [{"docId": "d", "chunkId": "7", "score": 0.12345}]},
        {"type": "model_call"},
    ]
    [hit] = hits(steps, {"d": "Handbook"}, {"7": "Vacation policy."})
    assert (hit.title, hit.snippet, hit.score) == ("Handbook", "Vacation policy.", 0.12345)
    assert hits(steps, {}, {})[0].title == ""  # a deleted document
