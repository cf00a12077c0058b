"""A run with a fake key leaves no trace of it in the lake, the cache, the logs or error messages."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.webgym.llm.conftest import endpoint, user
from webgym.config import ConfigError, load_config
from webgym.llm.client import LLMCallError
from webgym.llm.scripted_server import Reply, ScriptedServer
from webgym.llm.secrets import redact

KEY = "sk-test-SECRET-5f1c0b2e9d8a7766"


class Answer(BaseModel):
    value: int


def _files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_fake_key_never_reaches_lake_cache_logs_or_errors(make_llm, lake, tmp_path, monkeypatch, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("WEBGYM_TEST_KEY", KEY)
    with ScriptedServer(api_key=KEY) as server:
        server.add(Reply.http_error(429, retry_after_s=0.01), contains="busy", times=1)
        server.add(Reply.http_error(503, f"overloaded, key {KEY}"), contains="echo", times=1)
        server.add(Reply.http_error(400, f"Incorrect API key provided: {KEY}"), contains="echo")
        server.add(Reply(text="not json"), contains="number", times=1)
        server.add(Reply.json({"value": 7}))
        llm = make_llm(endpoint(server.base_url, api_key_env="WEBGYM_TEST_KEY"))
        assert llm.chat_sync("rubric", user("busy")).text == '{"value": 7}'
        assert llm.structured_sync("rubric", user("a number please"), Answer) == Answer(value=7)
        llm.chat_sync("rubric", user("busy"))  # cache hit
        with pytest.raises(LLMCallError) as echoed:
            llm.chat_sync("rubric", user("echo"))
        llm.close()
        assert 401 not in [r.status for r in server.requests]  # the key was sent and accepted
    assert KEY not in str(echoed.value) and "[redacted]" in str(echoed.value)
    assert _files_containing(Path(lake.root), KEY.encode()) == []
    assert _files_containing(tmp_path / "cache", KEY.encode()) == []
    assert KEY not in caplog.text and "overloaded, key [redacted]" in caplog.text
    assert KEY not in "".join(capsys.readouterr())
    assert lake.count("llm_calls") == 7  # 429 + ok, invalid + valid, cache hit, the echoed 503 and 400


def test_redact_removes_registered_and_key_shaped_values():
    assert redact(f"bad key {KEY}!") == "bad key [redacted]!"
    assert redact("Bearer sk-proj-abcdefghijklmnop") == "Bearer [redacted]"


@pytest.mark.parametrize(("entry", "field", "message"), [
    (f"{{base_url: 'http://x/v1', model: m, api_key_env: '{KEY}'}}", "api_key_env", "NAME of an environment"),
    (f"{{base_url: 'http://u:{KEY}@x/v1', model: m}}", "base_url", "must not hold credentials"),
    (f"{{base_url: 'https://x/v1?api-key={KEY}', model: m}}", "base_url", "must not hold credentials"),
])
def test_a_key_in_the_profile_is_refused_without_echoing_it(tmp_path, entry, field, message):
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"llm:\n  endpoints:\n    rubric:\n      - {entry}\n")
    with pytest.raises(ConfigError, match=rf"llm\.endpoints\.rubric\.0\.{field}: .*{message}") as error:
        load_config(profile)
    assert KEY not in str(error.value)
