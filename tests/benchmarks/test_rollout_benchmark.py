"""The rollout benchmark's pieces: the stand-in policy's script and the report's last line."""

from __future__ import annotations

import dataclasses
from collections import Counter

from tests.benchmarks import load_benchmark
from webgym.llm.scripted_server import ReceivedRequest
from webgym.rollout.collect import RolloutSummary

bench = load_benchmark("rollout")


def _request(step: int) -> ReceivedRequest:
    body = {"model": "stand-in", "messages": [{"role": "user", "content": f"Task: x\nStep {step} of at most 10."}]}
    return ReceivedRequest(body=body, headers={}, received_at=0.0)


def test_stand_in_answers_early_only_past_the_third_step_at_the_configured_rate():
    reply = bench.stand_in_reply(bench.BenchSettings(early_answer=0.3, seed=1))
    early = [reply(_request(step)).tool_calls[0][0] == "answer" for step in (1, 2, 3) for _ in range(50)]
    late = [reply(_request(5)).tool_calls[0][0] == "answer" for _ in range(2000)]
    assert not any(early)
    assert 0.25 < sum(late) / len(late) < 0.35


def test_mix_and_report():
    tasks = bench._tasks(bench.BenchSettings(episodes=100), ["http://shop-a.test/"])
    assert Counter(t.difficulty for t in tasks) == {2: 20, 5: 50, 8: 30}
    summary = lambda wall: RolloutSummary(episodes=10, steps=50, wall_s=wall, terminations=Counter(answered=10),  # noqa: E731
                                          op_busy_s=dict.fromkeys(["navigate", "screenshot", "execute", "policy"], 5.0),
                                          op_waited_s={})
    results = [bench.EngineResult("async", summary(10.0), 0.5), bench.EngineResult("sync", summary(40.0), 0.3)]
    text = bench.report(results, bench.BenchSettings(), browser_bound=8.0)
    assert text.splitlines()[-1] == "speedup: 4.00" and "trajectories/min" in text
    # 16 slots / (2 s median * exp(sigma^2 / 2)) = 5.61 steps/s binds before the browser's 8; async ran 5 steps/s
    assert "bound: 5.61 steps/s" in text and "whole run reached 89% of it" in text and "smoke" not in text
    assert "only smoke-tests" in bench.report(results, bench.BenchSettings.quick(), browser_bound=2.0)


def test_the_steady_rate_leaves_out_the_ramp_up_and_the_tail():
    # 8 episodes, 2 in flight: the window runs from the 2nd finished episode to the 6th, after which none is
    # left to start. The ramp-up (2 steps in 10 s) and the tail (1 step in 30 s) would pull a whole-run rate down.
    finished = [(10.0, 2), (11.0, 6), (12.0, 10), (13.0, 14), (14.0, 18), (15.0, 22), (45.0, 23), (46.0, 24)]
    steady = bench.EngineResult("async", RolloutSummary(), 0.5, finished, concurrency=2)
    assert steady.steady_steps_per_s == 4.0
    assert bench.EngineResult("async", RolloutSummary(), 0.5, finished[:4], concurrency=2).steady_steps_per_s is None
    summary = RolloutSummary(episodes=8, steps=24, wall_s=46.0, terminations=Counter(answered=8),
                             op_busy_s=dict.fromkeys(["navigate", "screenshot", "execute", "policy"], 1.0), op_waited_s={})
    text = bench.report([dataclasses.replace(steady, summary=summary), bench.EngineResult("sync", summary, 0.3)],
                        bench.BenchSettings(), browser_bound=5.0)
    assert "async's steady rate reached 80% of it" in text
