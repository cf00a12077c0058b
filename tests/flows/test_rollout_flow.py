"""The rollout flow: shards on a local Dask cluster of two processes (a cluster's code path), and a
rollout killed mid-run that finishes on the rerun without losing or duplicating episodes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.flows.site_lake import lake_with_site_tasks
from webgym.sites.verify import verify


def _profile(tmp_path, rollout: str) -> str:
    path = tmp_path / "profile.yaml"
    path.write_text(f"lake:\n  data_dir: {tmp_path / 'data'}\npolicy:\n  kind: oracle\n"
                    f"taskset:\n  sample:\n    ratio: null\nrollout:\n{rollout}")
    return str(path)


@pytest.mark.slow
def test_rollout_flow_shards_across_two_dask_worker_processes(prefect_harness, tmp_path):
    from flows.rollout import run_rollout

    lake = lake_with_site_tasks(tmp_path, ["shop-a", "mail-b"], goals=2)
    profile = _profile(tmp_path, "  task_runner: dask\n  workers: 2\n  shards: 2\n  concurrency: 2\n")
    report = run_rollout(config_path=profile, size=4)
    assert report.episodes == 4 and report.terminations == {"answered": 4}
    trajectories = lake.read_table("trajectories").merge(lake.read_table("tasks")[["task_id", "rubric"]])
    assert trajectories["trajectory_id"].is_unique and len(trajectories) == 4
    assert all(verify(r.rubric, r.final_state, r.answer).success for r in trajectories.itertuples())
    assert len({p.split("-it0-train-oracle-")[1][:1] for p in lake.parts("trajectories")}) == 2  # both shards wrote


@pytest.mark.slow
def test_killed_rollout_finishes_on_rerun_without_loss_or_duplicates(tmp_path):
    lake = lake_with_site_tasks(tmp_path, ["shop-a", "recipes-a", "mail-a"], goals=2)
    profile = _profile(tmp_path, "  concurrency: 1\n  commit_every: 1\n")
    command = [sys.executable, "-m", "webgym.cli", "--config", profile, "rollout", "--size", "6"]
    env = {**os.environ, "WEBGYM_DATA": ""}
    first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 240
    while lake.count("trajectories") < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    done_before = lake.count("trajectories")
    assert 2 <= done_before < 6
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-2000:]
    skipped = int(re.search(r"\((\d+) already done\)", second.stdout).group(1))
    assert skipped >= done_before  # journaled episodes of the killed run count as done too
    ids = lake.read_table("trajectories")["trajectory_id"]
    assert len(ids) == 6 and ids.is_unique
    steps = lake.read_table("steps")
    assert set(steps["trajectory_id"]) == set(ids) and not steps.duplicated(["trajectory_id", "t"]).any()


def test_a_chat_rollout_of_a_checkpoint_asks_the_endpoints_for_its_served_name(tmp_path):
    from webgym.config import load_config, with_checkpoint

    profile = tmp_path / "chat.yaml"
    profile.write_text("extends: " + os.path.abspath("configs/local.yaml") + "\npolicy: {kind: chat}\nllm:\n"
                       "  endpoints:\n    policy: [{base_url: 'http://127.0.0.1:9/v1', model: base, timeout_s: 7}]\n")
    base = load_config(profile)
    evaluated = with_checkpoint(base, "/shared/models/it3-grpo/", greedy=True)
    [endpoint] = evaluated.llm.endpoints["policy"]
    assert (endpoint.model, endpoint.timeout_s, endpoint.base_url) == ("it3-grpo", 7, "http://127.0.0.1:9/v1")
    assert evaluated.policy.sampling.temperature == 0.0
    assert base.llm.endpoints["policy"][0].model == "base"


def test_chosen_tasks_are_rolled_out_as_named_and_unknown_ones_are_refused(tmp_path):
    from flows.gates import MissingInputError
    from flows.rollout import select_tasks
    from webgym.config import load_config

    lake = lake_with_site_tasks(tmp_path, ["shop-a", "mail-b"], goals=2)
    config = load_config(_profile(tmp_path, "  concurrency: 1\n"))
    train = lake.read_table("tasks").query("split == 'train'")["task_id"].tolist()
    assert select_tasks(config, "train", 1, 0, train[::-1]) == train[::-1]  # size is the chosen list's
    with pytest.raises(MissingInputError, match="1 of the 2 chosen tasks are not train tasks of the lake at .*: nope"):
        select_tasks(config, "train", None, 0, [train[0], "nope"])


def test_the_oracle_draws_only_tasks_it_can_plan_and_a_learner_draws_its_source_shares(tmp_path):
    import pandas as pd

    from flows.rollout import select_tasks
    from tests.conftest import NOW
    from webgym.config import load_config, replaced
    from webgym.sites import miniwob

    lake = lake_with_site_tasks(tmp_path, ["shop-a", "mail-b"], goals=4)
    external = pd.DataFrame([miniwob.task_row("read-table", seed, "Read it", NOW) for seed in range(8)])
    lake.write_table("tasks", external.assign(split="train", family="miniwob/read-table"))
    path = tmp_path / "profile.yaml"
    path.write_text(f"lake:\n  data_dir: {tmp_path / 'data'}\npolicy:\n  kind: random\n"
                    "taskset:\n  sample:\n    ratio: null\n    source_shares: {miniwob: 0.5}\n")
    config = load_config(path)
    learner = select_tasks.fn(config, "train", 8, 0)
    assert sum(task.startswith("miniwob/") for task in learner) == 4 and len(learner) == 8
    oracle = config.model_copy(update={"policy": replaced(config.policy, kind="oracle")})
    demonstrated = select_tasks.fn(oracle, "train", None, 0)
    assert demonstrated and not any(task.startswith("miniwob/") for task in demonstrated)


def test_the_frontier_curriculum_retries_what_earlier_iterations_failed_and_redraws_the_same_batch(tmp_path):
    from flows.rollout import select_tasks
    from schemas.judgments import Judgment
    from schemas.trajectories import Trajectory
    from tests.conftest import NOW, rows
    from webgym.config import load_config

    lake = lake_with_site_tasks(tmp_path, ["shop-a", "mail-b"], goals=4)
    path = tmp_path / "profile.yaml"
    path.write_text(f"lake:\n  data_dir: {tmp_path / 'data'}\ntaskset:\n  sample:\n    ratio: null\n"
                    "    curriculum: frontier\n    retry_share: 0.5\n")
    config = load_config(path)
    train = sorted(lake.read_table("tasks").query("split == 'train'")["task_id"])
    first = select_tasks.fn(config, "train", 4, 7, None, 1)  # nothing judged yet: a plain draw
    assert len(first) == 4
    failed, solved = train[:2], train[2:4]
    lake.write_table("trajectories", rows([
        Trajectory(trajectory_id=f"r{i}", task_id=task, iteration=1, purpose="train", policy="scorer",
                   policy_version="it0", horizon=10, n_steps=2, termination="answered", started_at=NOW, ended_at=NOW)
        for i, task in enumerate(failed + solved)]))
    lake.write_table("judgments", rows([
        Judgment(judgment_id=f"j{i}", trajectory_id=f"r{i}", judge="exact", status="judged", success=task in solved,
                 reward=float(task in solved), judged_at=NOW) for i, task in enumerate(failed + solved)]))
    batch = select_tasks.fn(config, "train", 4, 7, None, 2)
    assert set(failed) <= set(batch) and len(batch) == 4
    assert batch == select_tasks.fn(config, "train", 4, 7, None, 2)
    assert select_tasks.fn(config, "train", 4, 7, None, 1) == first  # its own rollouts do not change a resumed draw
