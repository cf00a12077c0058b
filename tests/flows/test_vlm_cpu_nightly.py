"""configs/vlm-cpu.yaml shortened to one task per split: the warm start (oracle demonstrations -> SFT of the
small Qwen3-VL through the VLM trainer -> `webgym serve` -> the `chat` policy validated and evaluated over
the openai client in Chromium, judged by the exact verifier), then one GRPO iteration (a sampled group of 4
through the server -> judge -> accept -> GRPO through the VLM trainer, or no training signal when the
group's rewards are equal -> serve -> evaluate). After 10 epochs on one task the group's 4 samples usually
all end in parse_error (no signal); the full profile's run in README trained GRPO."""

from __future__ import annotations

import datetime as dt
import json

import pandas as pd
import pytest

from tests.flows.test_nightly import _webgym
from webgym import PROJECT_ROOT
from webgym.config import load_config
from webgym.lake import Lake
from webgym.ports import free_port
from webgym.serve import supervisor

FAMILIES = ["cinema", "grocery", "smarthome"]
"""One generated site each: the train task, the validation task and the held-out test task (two-step goals)."""


def _profile(tmp_path, base) -> str:
    port = free_port()
    profile = {
        "extends": str(PROJECT_ROOT / "configs" / "vlm-cpu.yaml"),
        "lake": {"data_dir": str(tmp_path / "data")}, "warehouse": {"path": str(tmp_path / "w.duckdb")},
        "sites": {"world": {"families": FAMILIES, "instances": 1}},
        "policy": {"checkpoint": str(base)},
        "llm": {"endpoints": {"policy": [{"base_url": f"http://127.0.0.1:{port}/v1", "model": "small-base",
                                          "timeout_s": 600}]}, "cache_dir": str(tmp_path / "llm-cache")},
        "serve": {"port": port, "state_dir": str(tmp_path / "serve")},
        # the warm start on one two-step task: what is checked is the wiring, not how far it learns
        "train": {"micro_batch_size": 2},
        "accept": {"grpo_target_groups": 1},
        "nightly": {"build_taskset": False, "warm_start_tasks": 1, "warm_start_epochs": 10, "episodes": 1,
                    "grpo_max_rounds": 0, "validation_tasks": 1, "eval_tasks": 1},
    }
    path = tmp_path / "vlm-cpu-short.yaml"
    path.write_text(json.dumps(profile))  # JSON is YAML
    return str(path)


def _write_tasks(profile: str) -> None:
    """A two-step goal of each family's site: train, validation, test (build_taskset is off)."""
    from webgym.sites.tasks import task_row, two_step_records
    from webgym.sites.world import world_of

    config = load_config(profile)
    sites = world_of(config.sites).sites
    records = two_step_records([sites[f"{family}-g0"] for family in FAMILIES], len(FAMILIES))
    now = dt.datetime.now(dt.UTC)
    rows = [task_row(r, split, now) for r, split in zip(records, ["train", "validation", "test"], strict=True)]
    Lake(config.lake.data_dir).write_table("tasks", pd.DataFrame(rows))


@pytest.mark.slow
def test_the_vlm_cpu_nightly_serves_validates_evaluates_and_trains_grpo_through_webgym_serve(tmp_path):
    from webgym.models.tiny import write_tiny_checkpoint

    base = write_tiny_checkpoint(tmp_path / "small-base", seed=0, size="small")
    profile = _profile(tmp_path, base)
    _write_tasks(profile)
    serve = load_config(profile).serve
    try:
        done = _webgym(profile, "nightly", "--iterations", "2")
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        out = " ".join(done.stdout.split())
        assert "iteration 0 (warm start)" in out
        lake = Lake(tmp_path / "data")
        checkpoints = lake.read_table("checkpoints").sort_values("iteration").to_dict("records")
        warm = checkpoints[0]
        assert warm["objective"] == "sft" and warm["base"] == str(base)  # the VLM trainer on policy.checkpoint
        # the warm start's SFT takes nightly.warm_start_learning_rate, GRPO the train block's 30 times smaller step
        assert dict(warm["metrics"])["train/lr"] == pytest.approx(3e-3)
        trajectories = lake.read_table("trajectories")
        chat = trajectories[trajectories["policy"] == "chat"]
        # iteration 1 sampled one group of 4 episodes of the train task from the warm start, through the server
        group = chat[(chat["iteration"] == 1) & (chat["purpose"] == "train")]
        assert len(group) == 4 and group["group_id"].nunique() == 1
        assert set(group["policy_version"]) == {warm["checkpoint_id"]}
        # every checkpoint answered through the server, on validation (before promotion) and test alike
        evals = lake.read_table("evals").merge(trajectories[["trajectory_id", "n_steps", "termination"]])
        assert evals.groupby(["iteration", "split"]).size().to_dict() == {  # one greedy episode, not 4
            (0, "test"): 1, (0, "validation"): 1, (1, "test"): 1, **({(1, "validation"): 1} if len(checkpoints) == 2
                                                                      else {})}
        assert (evals["n_steps"] > 0).all() and "policy_error" not in set(evals["termination"])
        steps = lake.read_table("steps")
        served_steps = steps[steps["trajectory_id"].isin(chat["trajectory_id"])]
        assert served_steps["token_logprobs"].map(lambda v: v is not None and len(v) > 0).all()
        accepted = lake.read_table("accepted").query("iteration == 1")
        if len(checkpoints) == 2:  # the group's rewards differed: GRPO trained from the warm start
            grpo = checkpoints[1]
            assert (grpo["objective"], grpo["base"]) == ("grpo", warm["path"]) and "iteration 1 (rollout)" in out
            assert dict(grpo["metrics"])["train/lr"] == pytest.approx(1e-4)
            assert len(accepted) and accepted["advantage"].notna().all()
        else:  # all 4 earned one reward: nothing to learn from, the warm start stays served
            assert accepted.empty and "iteration 1 (no training signal)" in out
        served = lake.read_table("promotions").query("promoted")["checkpoint_id"].tolist()[-1]
        assert set(evals.query("iteration == 1 and split == 'test'")["checkpoint"]) == {served}
        state = supervisor.read_state(serve)  # after the night the endpoint serves the served checkpoint
        assert state is not None and state.name == served and supervisor.process_of(state)
    finally:
        stopped = supervisor.stop(serve)
    assert stopped is not None and supervisor.process_of(stopped) is None  # no server outlives the test
