"""Log-probability parity: what the policy's model reported for each sampled token (through `webgym serve`
and the chat policy, or the local policy) equals the trainer's recomputation on the sample rebuilt from
the lake, so GRPO's ratio starts at 1. A server whose chat template differs from the trainer's breaks it."""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager



from tests.fixture_site import run_in_browser, site, url_of  # noqa: F401 (fixture)
from tests.webgym.rollout.test_collect import _write_tasks
from webgym.config import ContextConfig, EndpointConfig, EnvConfig, LLMConfig, RolloutConfig, SamplingConfig
from webgym.env.safety import UrlPolicy
from webgym.llm.client import LLM
from webgym.models.checkpoint import load_vlm
from webgym.models.tiny import CHAT_TEMPLATE
from webgym.policies.base import TaskSpec
from webgym.policies.chat import ChatPolicy
from webgym.policies.local import LocalPolicy, LocalPolicyConfig
from webgym.rollout.collect import collect, episode_specs
from webgym.serve.app import bind, build_app, http_server
from webgym.train.samples import samples_from_lake
from webgym.train.trainer import PARITY_TOLERANCE, logprob_parity

CONTEXT = ContextConfig(screenshots=2)
SAMPLING = SamplingConfig(temperature=1.0, top_p=1.0, max_tokens=12)


@contextmanager
def _served(vlm, name: str = "policy"):
    """`webgym serve`'s app on a free loopback port; yields its base URL."""
    sock = bind("127.0.0.1", 0)
    server = http_server(build_app(vlm, name))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the server thread died"
        threading.Event().wait(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def _roll_out(lake, site, make_policy) -> None:  # noqa: F811 (fixture)
    """Two sampled episodes of two steps in Chromium, recorded in the lake."""
    tasks = [TaskSpec(f"t{i}", "Open the next page", url_of(site), difficulty=2) for i in range(2)]
    _write_tasks(lake, tasks)
    settings = RolloutConfig(max_parse_errors=2)
    url_policy = UrlPolicy(allowed_hosts=frozenset({f"127.0.0.1:{site.server_address[1]}"}), allow_public=False)

    async def scenario(browser):
        with make_policy() as policy:
            await collect(episode_specs(tasks, 0, settings, "parity"), policy, browser, lake, settings, EnvConfig(),
                          url_policy)

    run_in_browser(scenario)


def _parity(lake, checkpoint):
    steps = lake.read_table("steps")
    assert len(steps) >= 2 and steps["token_logprobs"].map(len).gt(0).all()
    accepted = steps[["trajectory_id", "t"]].assign(weight=1.0, advantage=0.0)
    samples, problems = samples_from_lake(lake, accepted, CONTEXT)
    assert problems == [] and len(samples) == len(steps)
    assert all(s.old_token_logprobs is not None for s in samples)
    return logprob_parity(load_vlm(checkpoint), samples)


@contextmanager
def _chat_policy(lake, base_url, tmp_path):
    config = LLMConfig(endpoints={"policy": [EndpointConfig(base_url=base_url, model="policy", timeout_s=60)]},
                       cache_dir=str(tmp_path / "cache"), max_attempts=1)
    with LLM(config, lake, run_id="parity") as llm:
        yield ChatPolicy(llm, CONTEXT, SAMPLING)


def test_served_token_logprobs_equal_the_trainers_recomputation(lake, site, tiny_checkpoint, tmp_path):  # noqa: F811
    with _served(load_vlm(tiny_checkpoint)) as base_url:
        _roll_out(lake, site, lambda: _chat_policy(lake, base_url, tmp_path))
    parity = _parity(lake, tiny_checkpoint)
    print(f"chat via webgym serve: {parity}")
    assert parity.mismatched == [] and parity.tokens >= 4
    assert parity.max_abs_diff <= PARITY_TOLERANCE and parity.mean_abs_diff <= PARITY_TOLERANCE


def test_local_policy_token_logprobs_equal_the_trainers_recomputation(lake, site, tiny_checkpoint):  # noqa: F811
    @contextmanager
    def local():
        policy = LocalPolicy(LocalPolicyConfig(checkpoint=str(tiny_checkpoint)), CONTEXT, SAMPLING)
        try:
            yield policy
        finally:
            policy.close()

    _roll_out(lake, site, local)
    parity = _parity(lake, tiny_checkpoint)
    print(f"local policy: {parity}")
    assert parity.mismatched == [] and parity.tokens >= 4 and parity.max_abs_diff <= PARITY_TOLERANCE


def test_a_server_with_another_chat_template_fails_the_parity_check(lake, site, tiny_checkpoint, tmp_path):  # noqa: F811
    served = load_vlm(tiny_checkpoint)
    served.tokenizer.chat_template = "{{- 'Today is Monday.\\n' -}}" + CHAT_TEMPLATE  # the trainer's has no date line
    with _served(served) as base_url:
        _roll_out(lake, site, lambda: _chat_policy(lake, base_url, tmp_path))
    parity = _parity(lake, tiny_checkpoint)
    print(f"mismatched template: {parity}")
    assert parity.max_abs_diff > PARITY_TOLERANCE or math.isinf(parity.max_abs_diff)


