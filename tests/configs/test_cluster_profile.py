"""configs/cluster.yaml: every key is one the config classes know (they refuse unknown keys), and the
profile sets what running on a cluster depends on."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from stages.judge.run import plan_judges
from webgym import PROJECT_ROOT
from webgym.config import Config, load_config

PROFILE = PROJECT_ROOT / "configs" / "cluster.yaml"


@pytest.fixture
def cluster(monkeypatch) -> Config:
    monkeypatch.delenv("WEBGYM_DATA", raising=False)  # the environment would override the lake URL
    return load_config(PROFILE)


def test_cluster_profile_puts_the_lake_in_object_storage(cluster):
    assert cluster.profile == "cluster"
    assert cluster.lake.data_dir.startswith("s3://")
    assert "AWS_ENDPOINT_URL" in PROFILE.read_text()  # says how the endpoint is given


def test_cluster_profile_scales_rollouts_out_on_dask_with_remote_browsers(cluster):
    rollout = cluster.rollout
    assert rollout.task_runner == "dask" and rollout.cluster_address.startswith("tcp://")
    assert rollout.shards > 1
    assert cluster.env.browser_endpoint.startswith("ws://")


def test_cluster_profile_trains_on_gpus_with_deepspeed_into_shared_storage(cluster):
    train = cluster.train
    assert train.zero_stage in (2, 3) and train.precision == "bf16" and train.gradient_checkpointing
    assert PurePosixPath(train.checkpoints_dir).is_absolute()
    assert train.objective == cluster.accept.objective


def test_cluster_profile_acts_through_served_endpoints_and_judges_with_llms(cluster):
    assert cluster.policy.kind == "chat" and cluster.policy.checkpoint
    # the one replica the serve flow moves to each new checkpoint (an unmoved one would serve a stale policy)
    assert [e.base_url for e in cluster.llm.endpoints["policy"]] == [cluster.serve.base_url]
    plan = plan_judges(cluster)
    assert [judge.name for judge in plan.judges] == ["exact", "reference", "rubric"] and not plan.skipped
    assert plan.blocking
    keyed = [e for endpoints in [cluster.llm.default, *cluster.llm.endpoints.values()] for e in endpoints
             if e.base_url.startswith("https://")]
    assert keyed and all(e.api_key_env == "OPENAI_API_KEY" for e in keyed)  # keys by variable name only


def test_cluster_profile_dispatches_nightly_stages_as_deployments_and_serves_with_vllm(cluster):
    nightly = cluster.nightly
    assert nightly.dispatch == "deployments"
    assert (nightly.iterations, nightly.episodes, nightly.eval_tasks, nightly.warm_start_tasks) == (1, 512, None, 0)
    serve = cluster.serve
    assert serve.command == "vllm serve {checkpoint} --served-model-name {name} --port {port}"
    assert serve.base_url in {e.base_url for e in cluster.llm.endpoints["policy"]}  # the endpoint rollouts call
    assert serve.startup_timeout_s == 900
