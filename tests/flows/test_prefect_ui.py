"""The Prefect UI in Chromium against a running `webgym server`, as a user drives it: a nightly started with
the Run button shows its stages' lines live in the Logs tab, and the nightly-report artifact's link opens
the night's report, served over HTTP by the same `webgym server`, with the held-out success in it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.flows.site_lake import lake_with_site_tasks
from tests.prefect_server import RunningServer, webgym_server
from webgym import PROJECT_ROOT

TINY_NIGHT = """extends: {ci}
# The CI profile's night at its smallest that still trains and evaluates: the deployment's one iteration
# (the warm start) on one demonstration and one epoch, no validation, one held-out task, on a task set of
# two sites.
train:
  epochs: 1
nightly:
  build_taskset: false
  warm_start_tasks: 1
  warm_start_epochs: 1
  validation_tasks: 0
  eval_tasks: 1
"""


def _tiny_profile(tmp_path: Path) -> Path:
    lake_with_site_tasks(tmp_path, ["shop-a", "mail-b"], goals=2, test_sites=["mail-b"])
    profile = tmp_path / "tiny.yaml"
    profile.write_text(TINY_NIGHT.format(ci=PROJECT_ROOT / "configs" / "ci.yaml"))
    return profile


def _runs_asked_for(server: RunningServer) -> list:
    """The server's runs of a deployment that someone asked for: not the scheduler's runs of its schedules, not the
    nightly's stage subflows."""
    from prefect import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: server.api_url}), get_client(sync_client=True) as client:
        return [run for run in client.read_flow_runs() if run.deployment_id and not run.auto_scheduled]


def _created_run(server: RunningServer, timeout_s: float = 120):
    """The one run Quick run asked for, once it exists (the UI creates it through the API)."""
    deadline = time.monotonic() + timeout_s
    while not (runs := _runs_asked_for(server)):
        assert time.monotonic() < deadline, f"no flow run within {timeout_s} s of Quick run"
        time.sleep(0.5)
    assert len(runs) == 1, [run.name for run in runs]
    return runs[0]


@pytest.mark.slow
def test_a_nightly_run_from_the_ui_logs_live_and_its_report_link_opens_the_report(tmp_path):
    from playwright.sync_api import expect, sync_playwright

    from webgym.browser import CHROMIUM_FLAGS, chromium_executable, host_rules

    profile = _tiny_profile(tmp_path)
    with webgym_server(tmp_path / "data", tmp_path / "prefect", profile) as server, sync_playwright() as playwright:
        # No proxy (the UI and the reports are on loopback); names other than loopback do not resolve.
        browser = playwright.chromium.launch(executable_path=chromium_executable(playwright),
                                             args=[*CHROMIUM_FLAGS, f"--host-resolver-rules={host_rules(None)}"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(120_000)  # the UI's pages load slowly on a busy 2-core machine
        page.goto(server.api_url.removesuffix("/api") + "/deployments")
        page.get_by_role("link", name="nightly", exact=True).first.click()
        assert _runs_asked_for(server) == []
        page.get_by_role("button", name="Run", exact=True).click()
        page.get_by_text("Quick run", exact=True).click()
        # Open the run the button created. Not by the toast that names it: on a busy machine the toast can be
        # gone before the test reads it.
        run = _created_run(server)
        page.goto(server.api_url.removesuffix("/api") + f"/runs/flow-run/{run.id}")
        # Logs is the first tab. The promotion is logged after the rollout, judge and training, well after this
        # page opened: it appears without a reload.
        promotion = page.get_by_text("no validation split (nightly.validation_tasks 0): promoted")
        expect(page.get_by_text("Logs", exact=True)).to_be_visible()
        expect(promotion).to_have_count(0)
        expect(page.get_by_text("Beginning flow run")).to_be_visible(timeout=120_000)
        expect(promotion).to_be_visible(timeout=300_000)
        expect(page.get_by_text("Completed", exact=True).first).to_be_visible(timeout=300_000)

        page.get_by_text("Artifacts", exact=True).click()
        page.get_by_role("link", name="nightly-report").click()
        link = page.get_by_role("link", name="report.html", exact=True)
        assert link.get_attribute("href") == f"{server.reports_url}report.html"
        with page.context.expect_page() as opened:  # the link opens a new tab
            link.click()
        report = opened.value
        heldout = report.locator("table#heldout-success-by-kind")
        expect(heldout).to_contain_text("success_rate")
        cells = heldout.locator("tbody tr").first.locator("td").all_inner_texts()
        assert cells[0] == "it0 warm start" and cells[2] == "all" and 0.0 <= float(cells[5]) <= 1.0, cells
        browser.close()
