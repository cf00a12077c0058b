"""`webgym serve`: the tiny checkpoint behind the real openai client and the chat policy, answering
as in-process generation does."""

from __future__ import annotations

import asyncio
import base64
import threading

import openai
import pytest
from typer.testing import CliRunner

from tests.webgym.models.conftest import messages, png, policy_input
from webgym.cli import app
from webgym.config import ContextConfig, EndpointConfig, LLMConfig, SamplingConfig
from webgym.llm.client import LLM
from webgym.models.checkpoint import load_vlm
from webgym.models.generate import generate
from webgym.policies.chat import ChatPolicy
from webgym.serve.app import bind, build_app, http_server

NAME = "tiny-policy"


@pytest.fixture(scope="module")
def served(tiny_checkpoint):
    """The server on a free loopback port, in a thread of this process; yields (base_url, model)."""
    vlm = load_vlm(tiny_checkpoint)
    sock = bind("127.0.0.1", 0)
    server = http_server(build_app(vlm, NAME))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the server thread died"
        threading.Event().wait(0.01)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1", vlm
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture(scope="module")
def client(served):
    with openai.OpenAI(base_url=served[0], api_key="unused", max_retries=0) as made:
        yield made


def test_models_lists_the_served_name_and_its_checkpoint(client, tiny_checkpoint):
    models = client.models.list().data
    assert [m.id for m in models] == [NAME]
    assert models[0].model_extra["root"] == str(tiny_checkpoint)


def test_a_completion_with_an_image_is_the_in_process_generation(client, served):
    screenshot = png("red", (320, 200))
    url = "data:image/png;base64," + base64.b64encode(screenshot).decode()
    answer = client.chat.completions.create(
        model=NAME, temperature=0, max_tokens=8, logprobs=True,
        messages=[{"role": "user", "content": [{"type": "text", "text": "What is on the page?"},
                                               {"type": "image_url", "image_url": {"url": url}}]}])
    expected = generate(served[1], [{"role": "user", "content": [{"type": "text", "text": "What is on the page?"},
                                                                 {"type": "image", "png": screenshot}]}],
                        temperature=0, max_new_tokens=8)
    choice = answer.choices[0]
    assert choice.message.content == expected.text
    assert choice.finish_reason == ("length" if len(expected.token_ids) == 8 else "stop")
    assert answer.usage.prompt_tokens == expected.prompt_tokens
    assert answer.usage.completion_tokens == len(expected.token_ids)
    logprobs = [t.logprob for t in choice.logprobs.content]
    assert len(logprobs) == len(expected.token_ids) and sum(logprobs) == pytest.approx(expected.logprob, abs=1e-4)
    text_only = client.chat.completions.create(model=NAME, max_tokens=4,
                                               messages=[{"role": "user", "content": "What is on the page?"}])
    assert text_only.choices[0].logprobs is None  # only when asked
    assert text_only.usage.prompt_tokens < expected.prompt_tokens  # the image's tokens were in the prompt


def test_a_seeded_sample_is_reproducible(client):
    def sample(seed: int) -> str:
        answer = client.chat.completions.create(model=NAME, temperature=1.0, max_tokens=12, seed=seed,
                                                messages=[{"role": "user", "content": "Name a colour."}])
        return answer.choices[0].message.content

    assert sample(5) == sample(5) != sample(6)


def test_the_chat_policy_acts_through_the_server_and_records_the_served_name(served, lake, tmp_path):
    base_url, vlm = served
    config = LLMConfig(endpoints={"policy": [EndpointConfig(base_url=base_url, model=NAME, timeout_s=60)]},
                       cache_dir=str(tmp_path / "cache"), max_attempts=1)
    sampling = SamplingConfig(temperature=0, max_tokens=12)
    with LLM(config, lake, run_id="serve-test") as llm:
        policy = ChatPolicy(llm, ContextConfig(), sampling)
        output = asyncio.run(policy.act(policy_input(history=1)))
    expected = generate(vlm, messages(history=1), temperature=0, max_new_tokens=12)
    assert policy.version == NAME  # what trajectories record as policy_version
    assert output.response == expected.text
    assert output.logprob == pytest.approx(expected.logprob, abs=1e-4)
    assert output.usage == {"tokens_in": expected.prompt_tokens, "tokens_out": len(expected.token_ids)}


def test_requests_it_cannot_answer_are_refused_naming_why(client):
    hello = [{"role": "user", "content": "hello"}]
    with pytest.raises(openai.NotFoundError, match=f"serves `{NAME}`"):
        client.chat.completions.create(model="another-checkpoint", messages=hello)
    with pytest.raises(openai.BadRequestError, match="stream"):
        client.chat.completions.create(model=NAME, messages=hello, stream=True)
    with pytest.raises(openai.BadRequestError, match="base64 data URL"):
        client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "http://example.com/shot.png"}}]}])
    with pytest.raises(openai.BadRequestError, match="message 0.*not a readable image"):
        client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}]}])
    with pytest.raises(openai.BadRequestError, match="temperature"):
        client.chat.completions.create(model=NAME, messages=hello, temperature=7)


def test_the_command_refuses_a_missing_checkpoint(tmp_path):
    result = CliRunner().invoke(app, ["serve", "--checkpoint", str(tmp_path / "nowhere"), "--port", "0"])
    assert result.exit_code == 2 and "does not exist" in " ".join(result.output.split())
