"""Figures for the judge stage against the scripted server on this machine (no network, no model).

    .venv/bin/python benchmarks/judge.py [--trajectories 120] [--median-s 0.25]

A judge model answers each call after a lognormal delay (median --median-s, p95 4x); every
trajectory has 10 steps over 6 distinct 1280x720 screenshots and a 5-fact rubric, so the rubric
judge makes 6 key-screenshot calls, 1 hallucination call and 5 fact calls. Prints trajectories per
second and calls per second at several `judge.concurrency` settings, the ideal for that latency,
and a rejudge answered from the LLM cache.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import tempfile
import time
from pathlib import Path

import pandas as pd
from PIL import Image, ImageDraw

from schemas.rubric import FactGroup, Rubric
from schemas.steps import Action, Step
from schemas.tasks import Task
from schemas.trajectories import Trajectory
from flows.judge import judge_iteration
from webgym.config import Config, EndpointConfig, JudgeConfig, LakeConfig, LLMConfig
from webgym.lake import Lake
from webgym.llm.scripted_server import Latency, Reply, ScriptedServer

NOW = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
STEPS, DISTINCT, FACTS = 10, 6, 5
CALLS_PER_TRAJECTORY = DISTINCT + 1 + FACTS


def screenshot(i: int) -> bytes:
    """A page-like 1280x720 PNG (bars of text-like boxes), different per i."""
    image = Image.new("RGB", (1280, 720), (250, 250, 250))
    draw = ImageDraw.Draw(image)
    for row in range(24):
        draw.rectangle((40, 20 + row * 29, 40 + (row * 97 + i * 53) % 1100 + 60, 38 + row * 29),
                       fill=((row * 40 + i * 17) % 200, 90, 160))
        draw.text((60, 22 + row * 29), f"Item {i}-{row} costs ${row * 3 + i}.99", fill=(255, 255, 255))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def seed(lake: Lake, n: int) -> None:
    shots = [lake.put_blob(screenshot(i)) for i in range(DISTINCT * 4)]
    rubric = Rubric(groups=[FactGroup(description="order", facts=[f"fact {j}" for j in range(FACTS)])])
    lake.write_table("tasks", pd.DataFrame([Task(
        task_id=f"t{i}", source="bench", source_id=str(i), text=f"Buy item {i}", website="shop.example",
        difficulty=FACTS, rubric=rubric, created_at=NOW).model_dump() for i in range(n)]))
    lake.write_table("trajectories", pd.DataFrame([Trajectory(
        trajectory_id=f"r{i}", task_id=f"t{i}", iteration=0, policy="bench", policy_version="v0", horizon=20,
        n_steps=STEPS, termination="answered", answer=f"Bought item {i}", started_at=NOW, ended_at=NOW).model_dump()
        for i in range(n)]))
    lake.write_table("steps", pd.DataFrame([Step(
        trajectory_id=f"r{i}", t=t, screenshot_sha256=shots[(i + min(t, DISTINCT - 1)) % len(shots)],
        url="http://shop.example/", actions=[Action(name="click", x=1.0, y=1.0, feedback="clicked")]).model_dump()
        for i in range(n) for t in range(STEPS)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=120)
    parser.add_argument("--median-s", type=float, default=0.25)
    args = parser.parse_args()
    verdict = Reply.json({"reasoning": "the screenshots show it", "verdict": "SUCCESS"})
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(latency=Latency.lognormal(args.median_s)) as server:
        server.add(Reply.json({"reasoning": "the product page", "keep": True}), purpose="judge-keypoints")
        server.add(verdict)
        # critical path of one trajectory: key screenshots, then criterion B, then the facts (each stage parallel)
        print(f"{args.trajectories} trajectories x {CALLS_PER_TRAJECTORY} calls, judge latency median "
              f"{args.median_s:.2f} s (p95 {4 * args.median_s:.2f} s); one trajectory needs ~3 sequential rounds")
        for concurrency in (1, 8, 32):
            root = Path(tmp) / f"c{concurrency}"
            lake = Lake(root / "data")
            seed(lake, args.trajectories)
            endpoint = EndpointConfig(base_url=server.base_url, model="judge", max_concurrency=256, timeout_s=60)
            config = Config(lake=LakeConfig(data_dir=str(root / "data")), judge=JudgeConfig(concurrency=concurrency),
                            llm=LLMConfig(default=[endpoint], cache_dir=str(root / "cache"), ledger_flush_rows=1000))
            sent = len(server.requests)
            started = time.perf_counter()
            summary = judge_iteration.fn(config, iteration=0)
            seconds = time.perf_counter() - started
            calls = len(server.requests) - sent
            assert summary.outcomes[("rubric", "success")] == args.trajectories, summary.outcomes
            print(f"judge.concurrency={concurrency:>3}: {seconds:6.1f} s, {args.trajectories / seconds:6.2f} "
                  f"trajectories/s, {calls / seconds:6.1f} calls/s ({calls} calls)")
        started = time.perf_counter()
        judge_iteration.fn(config, iteration=0, rejudge=True)
        seconds = time.perf_counter() - started
        print(f"rejudge from the LLM cache (concurrency {concurrency}): {seconds:.1f} s, "
              f"{len(server.requests) - sent - calls} new requests")


if __name__ == "__main__":
    main()
