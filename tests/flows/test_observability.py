"""What a run leaves in Prefect, read back through its API from `webgym server`: the stages' INFO lines
(counts, progress), the artifacts (evaluation table, rollout and judge summaries, rollout progress, the
night's report link and summary), and for a failing run its cause."""

from __future__ import annotations

import httpx
import pytest

from tests.flows.site_lake import lake_with_site_tasks
from tests.prefect_server import webgym_server


def _all_logs(client) -> list:
    logs, offset = [], 0
    while page := client.read_logs(limit=200, offset=offset):
        logs += page
        offset += len(page)
    return logs


@pytest.mark.slow
def test_runs_on_the_server_show_stage_logs_artifacts_and_a_failures_cause(tmp_path):
    from prefect import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    lake_with_site_tasks(tmp_path, ["mail-b", "shop-a"], goals=1, test_sites=["mail-b"])
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"lake:\n  data_dir: {tmp_path / 'data'}\npolicy:\n  kind: oracle\n"
                       "nightly:\n  build_taskset: false\n")
    with webgym_server(tmp_path / "data", tmp_path / "prefect", profile) as server:
        with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
            evaluated = run_deployment("evaluate/evaluate", parameters={"iteration": 0}, timeout=300)
            failed = run_deployment("train/train", parameters={"iteration": 7}, timeout=120)
            night = run_deployment("nightly/nightly", parameters={"iterations": 0}, timeout=120)
            with get_client(sync_client=True) as client:
                logs = _all_logs(client)
                artifacts = {a.key or a.type: a for a in client.read_artifacts()}
        report = httpx.get(f"{server.reports_url}report.html")  # the link's target, while the server runs
    assert evaluated.state.is_completed() and night.state.is_completed(), (evaluated.state, night.state)
    lines = {(log.name, log.message) for log in logs if log.level == 20}
    messages = [message for _, message in lines]
    assert any(name == "flows.rollout" and "1 test tasks x 1 episodes, policy oracle" in message
               for name, message in lines)
    assert any(name == "webgym.rollout.runner" and "shard 0: 1/1 episodes" in message for name, message in lines)
    assert any(message.startswith("judged iteration 0: exact: 1 success") for message in messages)
    assert any(message.startswith("evaluation ") and "1 episodes, success 1.000" in message for message in messages)
    assert all(log.flow_run_id for log in logs)  # each line on its run's Logs tab

    assert failed.state.is_failed()
    cause = [log.message for log in logs if log.flow_run_id == failed.id and log.level >= 40]
    assert any("no trajectories of iteration 7" in m and "`webgym rollout --iteration 7`" in m for m in cause), cause

    assert artifacts["baseline-success"].type == "table"  # the profile's policy, no checkpoint
    table = artifacts["baseline-success"].data
    assert '"group": "all"' in table and '"ci_low"' in table and '"difficulty_band"' in table
    assert "**1** episodes run now" in artifacts["rollout-summary"].data
    assert "**exact**: 1 success" in artifacts["judge-summary"].data
    assert artifacts["progress"].data == 100.0
    assert f"report.html]({server.reports_url}report.html)" in artifacts["nightly-report"].data
    assert report.status_code == 200 and "WebGym report" in report.text
    assert f"Reports: {server.reports_url} " in server.output
    assert "no iteration run" in artifacts["nightly-summary"].data
    tracking = artifacts["nightly-tracking"].data  # the deployment run's folder, named by its start and run name
    assert f"`tensorboard --logdir {tmp_path / 'data' / 'tensorboard'}`" in tracking
    assert f"{tmp_path / 'data' / 'tensorboard'}/" in tracking and night.name in tracking
