"""Structured answers: schema-valid, invalid then valid, always invalid, and the ways of asking."""

from __future__ import annotations

import pandas as pd
import pytest
from pydantic import BaseModel

from schemas.rubric import Rubric
from tests.webgym.llm.conftest import endpoint, ledger, user
from webgym.llm.scripted_server import Reply
from webgym.llm.structured import InvalidAnswer, StructuredFailure, parse_answer

RUBRIC = {"groups": [{"description": "the mug", "facts": ["it is red", "it is in the cart"]}]}


class Verdict(BaseModel):
    success: bool
    reason: str


def test_schema_valid_answer_is_returned_typed(llm, server):
    server.add(Reply.json(RUBRIC), contains="red mug")
    rubric = llm.structured_sync("rubric", user("Rubric for: buy the red mug"), Rubric)
    assert isinstance(rubric, Rubric) and rubric.n_facts == 2
    fmt = server.requests[0].body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Rubric"
    assert fmt["json_schema"]["schema"]["required"] == ["groups"]
    assert ledger(llm)["error"].isna().all()


def test_invalid_then_valid_retries_once_with_the_error_fed_back(llm, server):
    server.add(Reply.json({"success": "maybe"}), contains="Judge", times=1)
    server.add(Reply.json({"success": True, "reason": "cart shows the mug"}), contains="could not be used")
    verdict = llm.structured_sync("judge-facts", user("Judge this trajectory"), Verdict)
    assert verdict == Verdict(success=True, reason="cart shows the mug")
    retry = server.requests[1]
    assert [m["role"] for m in retry.messages] == ["user", "assistant", "user"]
    assert retry.messages[1]["content"] == '{"success": "maybe"}'
    assert "success: Input should be a valid boolean" in retry.last_user_text
    assert "reason: Field required" in retry.last_user_text
    rows = ledger(llm)
    assert len(rows) == 2 and rows["error"][0].startswith("InvalidAnswer: success:") and pd.isna(rows["error"][1])


def test_always_invalid_gives_a_typed_failure_after_n_answers(make_llm, server):
    server.add(Reply(text='{"success": true, "reason": "trunc'))
    llm = make_llm(endpoint(server.base_url), structured_attempts=4)
    failure = llm.structured_sync("judge-facts", user("Judge"), Verdict)
    assert isinstance(failure, StructuredFailure)
    assert failure.attempts == 4 and len(failure.errors) == 4 and len(server.requests) == 4
    assert "Invalid JSON" in failure.errors[-1] and failure.last_answer == '{"success": true, "reason": "trunc'
    assert ledger(llm)["error"].str.startswith("InvalidAnswer").all()


def test_rerun_of_a_structured_call_is_answered_from_the_cache(make_llm, server):
    server.add(Reply.json({"success": "no"}), contains="Judge", times=1)
    server.add(Reply.json({"success": False, "reason": "empty cart"}), contains="could not be used")
    first = make_llm(endpoint(server.base_url)).structured_sync("judge-facts", user("Judge"), Verdict)
    again = make_llm(endpoint(server.base_url)).structured_sync("judge-facts", user("Judge"), Verdict)
    assert first == again == Verdict(success=False, reason="empty cart")
    assert len(server.requests) == 2


@pytest.mark.parametrize("mode", ["json_object", "prompt"])
def test_endpoints_without_schema_decoding_get_the_schema_in_the_system_message(make_llm, server, mode):
    server.add(Reply(text='```json\n{"success": true, "reason": "ok"}\n```'))
    llm = make_llm(endpoint(server.base_url, structured=mode))
    messages = [{"role": "system", "content": "You judge web tasks."}, *user("Judge")]
    assert llm.structured_sync("judge-facts", messages, Verdict) == Verdict(success=True, reason="ok")
    body = server.requests[0].body
    assert body["messages"][0]["content"].startswith("You judge web tasks.\n\nAnswer with only a JSON object")
    assert '"reason"' in body["messages"][0]["content"] and len(body["messages"]) == 2
    assert body.get("response_format") == ({"type": "json_object"} if mode == "json_object" else None)


def test_parse_answer_names_the_problem():
    with pytest.raises(InvalidAnswer, match="the answer was empty"):
        parse_answer("  ", Verdict)
    with pytest.raises(InvalidAnswer, match="reason: Field required"):
        parse_answer('{"success": true}', Verdict)
    assert parse_answer('{"success": false, "reason": "x"}', Verdict).reason == "x"
