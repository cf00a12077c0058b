"""The serve flow: the profile's command template started for a checkpoint, replaced by the next
one, and a server that dies or never answers reported with its log."""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest
import yaml

from webgym.config import ConfigError, load_config
from webgym.lake import Lake
from webgym.ports import free_port
from webgym.serve import supervisor
from webgym.serve.supervisor import ServeError

WEBGYM_SERVE = "{python} -m webgym.cli serve --checkpoint {checkpoint} --port {port} --served-model-name {name}"


def _profile(tmp_path, command: str | None, **serve) -> str:
    settings = {"command": command, "port": free_port(), "state_dir": str(tmp_path / "serve"),
                "startup_timeout_s": 180, "stop_grace_s": 10, **serve}
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump({"serve": settings, "lake": {"data_dir": str(tmp_path / "data")}}))  # runs rows
    return str(path)


@pytest.fixture
def stop_servers():
    """Stop whatever a test's profile left running, pass or fail."""
    profiles: list[str] = []
    yield profiles.append
    for profile in profiles:
        supervisor.stop(load_config(profile).serve)


@pytest.mark.slow
def test_a_new_checkpoint_replaces_the_served_one(prefect_harness, tiny_checkpoint, tmp_path, stop_servers):
    from flows.serve import serve

    first, second = (shutil.copytree(tiny_checkpoint, tmp_path / name) for name in ("it-1", "it-2"))
    profile = _profile(tmp_path, WEBGYM_SERVE)
    stop_servers(profile)
    config = load_config(profile).serve
    url = supervisor.base_url(config)

    one = serve(checkpoint=str(first), config_path=profile)
    assert one.started and one.name == "it-1" and one.base_url == url and one.replaced is None
    assert supervisor.listed_models(url) == ["it-1"] and psutil.pid_exists(one.pid)

    again = serve(checkpoint=str(first), config_path=profile)
    assert not again.started and again.pid == one.pid and "already serving" in again.note

    two = serve(checkpoint=str(second), config_path=profile)
    assert two.started and two.name == "it-2" and two.replaced == "it-1" and two.pid != one.pid
    assert not psutil.pid_exists(one.pid)
    assert supervisor.listed_models(url) == ["it-2"]
    assert supervisor.read_state(config).pid == two.pid
    assert "serving it-2" in Path(two.log).read_text()
    assert "serving it-1" in (Path(two.log).parent / supervisor.PREVIOUS_LOG_FILE).read_text()


def test_a_server_that_exits_early_fails_the_flow_with_its_log(prefect_harness, tmp_path, stop_servers):
    from flows.serve import serve

    crash = "{python} -c \"import sys; print('no GPU for', sys.argv[1]); sys.exit(3)\" {checkpoint} {name}"
    profile = _profile(tmp_path, crash)
    stop_servers(profile)
    with pytest.raises(ServeError, match=r"(?s)exited with code 3 .*no GPU for /models/it-7"):
        serve(checkpoint="/models/it-7", config_path=profile)
    assert supervisor.read_state(load_config(profile).serve) is None
    [run] = Lake(load_config(profile).lake.data_dir).read_table("runs").itertuples()
    assert (run.run_name, run.outcome) == ("serve-it-7", "failed") and "exited with code 3" in run.message


def test_a_server_that_never_answers_is_stopped_at_the_timeout(prefect_harness, tmp_path, stop_servers):
    from flows.serve import serve

    hang = "{python} -c \"import sys, time; print('loading', sys.argv[1], flush=True); time.sleep(600)\" {checkpoint} {name}"
    profile = _profile(tmp_path, hang, startup_timeout_s=1.5)
    stop_servers(profile)
    with pytest.raises(ServeError, match=r"(?s)did not list 'it-7' within .*1.5 s.*loading /models/it-7"):
        serve(checkpoint="/models/it-7", config_path=profile)
    assert supervisor.read_state(load_config(profile).serve) is None
    assert not [p for p in psutil.Process().children(recursive=True) if "time.sleep(600)" in " ".join(p.cmdline())]


def test_without_a_command_nothing_is_served(prefect_harness, tmp_path):
    from flows.serve import serve

    report = serve(checkpoint="/models/it-7", served_model_name="policy-7", config_path=_profile(tmp_path, None))
    assert not report.started and report.base_url is None and report.name == "policy-7"
    assert "in-process" in report.note


def test_a_template_with_an_unknown_placeholder_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"serve.command: .*unknown placeholder.*'model'"):
        load_config(_profile(tmp_path, "vllm serve {checkpoint} --served-model-name {model}"))
    with pytest.raises(ConfigError, match=r"serve.command: .*must contain \{checkpoint\} and \{name\}"):
        load_config(_profile(tmp_path, "vllm serve {checkpoint}"))
