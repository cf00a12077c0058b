"""prefect.yaml: the seven flows' deployments, loadable as served deployments, on the pools they need."""

from __future__ import annotations

import pytest
from prefect import Flow

from webgym.config import ConfigError
from webgym.deployments import load_specs, served_deployments

POOLS = {"build_taskset": "browser-cpu", "rollout": "browser-cpu", "judge": "browser-cpu", "evaluate": "browser-cpu",
         "nightly": "browser-cpu", "train": "gpu-train", "serve": "gpu-serve"}


def test_prefect_yaml_declares_every_flow_on_the_pool_it_needs_and_nightly_nightly():
    specs = {spec.name: spec for spec in load_specs()}
    assert {name: spec.work_pool for name, spec in specs.items()} == POOLS
    assert [s["cron"] for s in specs["nightly"].schedules] == ["0 2 * * *"]
    for spec in specs.values():
        flow = spec.load_flow()
        assert isinstance(flow, Flow) and flow.name == spec.name
        assert spec.entrypoint == f"flows.{spec.name}:{spec.name}" and spec.description


def test_served_deployments_carry_parameters_schedules_and_the_profile_in_force(tmp_path):
    defaults = {"data_dir": str(tmp_path), "config_path": "p.yaml", "no_flow_has_this": 1}
    served = {d.name: d for d in served_deployments(load_specs(), defaults)}
    assert served["rollout"].parameters == {"data_dir": str(tmp_path), "config_path": "p.yaml", "iteration": 0,
                                            "split": "train", "size": 32}
    # serve takes the lake too: its runs row goes there
    assert served["serve"].parameters == {"data_dir": str(tmp_path), "config_path": "p.yaml"}
    assert [s.schedule.cron for s in served["nightly"].schedules] == ["0 2 * * *"]
    assert served["judge"].schedules == []
    assert "checkpoint" in served["serve"]._parameter_openapi_schema.required


def test_a_deployment_with_a_parameter_its_flow_lacks_is_named(tmp_path):
    path = tmp_path / "prefect.yaml"
    path.write_text("deployments:\n  - name: judge\n    entrypoint: flows/judge.py:judge\n"
                    "    work_pool: {name: browser-cpu}\n    parameters: {iteration: 0, itteration: 1}\n")
    with pytest.raises(ConfigError, match="deployment judge: flow judge has no parameter.*itteration"):
        served_deployments(load_specs(path), {})


def test_a_malformed_entry_is_named_by_position_and_field(tmp_path):
    path = tmp_path / "prefect.yaml"
    path.write_text("deployments:\n  - name: judge\n    entrypoint: flows/judge.py:judge\n")
    with pytest.raises(ConfigError, match=r"deployments\[0\] \(judge\): missing work_pool"):
        load_specs(path)
