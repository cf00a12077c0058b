"""The progress line of long loops: periodic, at the last item of work that took a period, with its note."""

from __future__ import annotations

import logging

from webgym.progress import Ticker

log = logging.getLogger("webgym.test_progress")


def test_work_shorter_than_a_period_stays_quiet_and_a_zero_period_logs_every_item(caplog):
    caplog.set_level(logging.INFO, logger="webgym")
    quiet = Ticker(log, "oracle paths", 3, "goals searched", every_s=3600)
    for _ in range(3):
        quiet.tick()
    assert not caplog.records
    busy = Ticker(log, "replay in Chromium", 2, "goals", every_s=0)
    busy.tick()
    busy.tick("1 failed")
    lines = [r.getMessage() for r in caplog.records]
    assert [line.rsplit(" in ", 1)[0] for line in lines] == ["replay in Chromium: 1/2 goals", "replay in Chromium: 2/2 goals"]
    assert lines[-1].endswith(" s, 1 failed") and not lines[0].endswith("failed")
