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
    text = bench.report(results, bench.BenchSettings(capacity=16), browser_bound=8.0)
    assert text.splitlines()[-1] == "speedup: 4.00" and "trajectories/min" in text
    # 16 slots / (2 s median * exp(sigma^2 / 2)) = 5.61 steps/s binds before the browser's 8; async ran 5 steps/s
    assert "bound: 5.61 steps/s" in text and "whole run reached 89% of it" in text and "smoke" not in text
    assert "only smoke-tests" in bench.report(results, bench.BenchSettings.quick(), browser_bound=2.0)


def test_the_steady_rate_leaves_out_the_ramp_up_and_the_tail():
    # 6 episodes, 2 in flight, finishing at 4, 4, 8, 8, 30, 30 s: the window runs from the 2nd finish (4 s) to the
    # 4th (8 s), the last start, and holds 8 steps: 2 steps/s. The two slow last episodes (11 steps in 22 s) would
    # pull the whole run down to 38 steps in 30 s.
    episodes = [(0.0, 4.0, 4), (0.0, 4.0, 4), (4.0, 8.0, 4), (4.0, 8.0, 4), (8.0, 30.0, 11), (8.0, 30.0, 11)]
    steady = bench.EngineResult("async", RolloutSummary(), 0.5, episodes, concurrency=2)
    assert steady.steady_steps_per_s == 2.0
    # An episode still running when the window ends (4 s to 12 s, 8 steps) counts the 5 steps it took inside it:
    # window (4 s, 9 s] = 4 + 1 + 5 steps in 5 s.
    straddling = [(0.0, 4.0, 4), (0.0, 4.0, 4), (4.0, 8.0, 4), (8.0, 9.0, 1), (4.0, 12.0, 8), (9.0, 13.0, 4)]
    assert bench._steps_within((4.0, 12.0, 8), 4.0, 9.0) == 5
    assert bench.EngineResult("async", RolloutSummary(), 0.5, straddling, concurrency=2).steady_steps_per_s == 2.0
    assert bench.EngineResult("async", RolloutSummary(), 0.5, episodes[:4], concurrency=2).steady_steps_per_s is None
    summary = RolloutSummary(episodes=6, steps=38, wall_s=30.0, terminations=Counter(answered=6),
                             op_busy_s=dict.fromkeys(["navigate", "screenshot", "execute", "policy"], 1.0), op_waited_s={})
    text = bench.report([dataclasses.replace(steady, summary=summary),
                         bench.EngineResult("sync", summary, 0.3, episodes, concurrency=2)],
                        bench.BenchSettings(), browser_bound=2.5)
    assert "async's steady rate reached 80% of it" in text
    assert [line.split()[-2:] for line in text.splitlines() if line.startswith("steps/s, steady")] == [["2.00", "-"]]
