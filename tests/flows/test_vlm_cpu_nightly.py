"""configs/vlm-cpu.yaml shortened: the nightly on the production VLM path end to end (oracle demonstrations
-> SFT of the small Qwen3-VL -> `webgym serve` -> sampled `chat` groups -> exact verifier -> GRPO through the
VLM trainer -> validate -> serve -> evaluate), in Chromium, over the openai client, on a 2-core machine."""

from __future__ import annotations

import datetime as dt
import json

import pandas as pd
import pytest

from tests.flows.test_nightly import _webgym
from webgym import PROJECT_ROOT
from webgym.cli.serve import free_port
from webgym.config import load_config
from webgym.lake import Lake
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
        # one task memorised by the warm start, then rolled out by the chat policy in one group of 4
        "accept": {"grpo_target_groups": 1},
        "train": {"micro_batch_size": 2, "epochs": 1},
        "nightly": {"build_taskset": False, "warm_start_tasks": 1, "warm_start_epochs": 30, "episodes": 1,
                    "validation_tasks": 1, "eval_tasks": 1},
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
def test_the_vlm_cpu_nightly_warm_starts_serves_and_trains_grpo_on_chat_rollouts(tmp_path):
    from webgym.models.tiny import write_tiny_checkpoint

    base = write_tiny_checkpoint(tmp_path / "small-base", seed=0, size="small")
    profile = _profile(tmp_path, base)
    _write_tasks(profile)
    serve = load_config(profile).serve
    try:
        done = _webgym(profile, "nightly")
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        out = " ".join(done.stdout.split())
        assert "iteration 0 (warm start)" in out and "iteration 1 (rollout)" in out
        lake = Lake(tmp_path / "data")
        checkpoints = lake.read_table("checkpoints").sort_values("iteration")
        assert checkpoints["iteration"].tolist() == [0, 1] and checkpoints["objective"].tolist() == ["sft", "grpo"]
        assert checkpoints["base"].iloc[0] == str(base)  # the warm start trains policy.checkpoint
        trajectories = lake.read_table("trajectories")
        rolled = trajectories[(trajectories["iteration"] == 1) & (trajectories["purpose"] == "train")]
        assert set(rolled["policy"]) == {"chat"} and set(rolled["policy_version"]) == {checkpoints["checkpoint_id"].iloc[0]}
        assert rolled.groupby("group_id").size().min() == 4  # GRPO groups of the same task
        steps = lake.read_table("steps")
        sampled = steps[steps["trajectory_id"].isin(rolled["trajectory_id"])]
        assert len(sampled) and sampled["token_logprobs"].map(lambda v: v is not None and len(v) > 0).all()
        # every checkpoint answered through the server: validated and evaluated on episodes that took steps
        evals = lake.read_table("evals").merge(trajectories[["trajectory_id", "n_steps", "termination"]])
        validated = evals[evals["split"] == "validation"]
        assert set(validated["checkpoint"]) == set(checkpoints["checkpoint_id"])
        tested = evals[evals["split"] == "test"]
        assert tested.groupby("iteration")["checkpoint"].agg(set).get(0) == {checkpoints["checkpoint_id"].iloc[0]}
        assert set(tested["iteration"]) == {0, 1}
        assert (evals["n_steps"] > 0).all() and "policy_error" not in set(evals["termination"])
        # after the night the policy endpoint serves the served checkpoint
        state = supervisor.read_state(serve)
        assert state is not None and state.name in set(tested.loc[tested["iteration"] == 1, "checkpoint"])
        assert supervisor.process_of(state) is not None
    finally:
        stopped = supervisor.stop(serve)
    assert stopped is not None and supervisor.process_of(stopped) is None  # no server outlives the test
