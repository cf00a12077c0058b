"""A periodic progress line for long loops that are not rollouts (those have their own, with steps/s
and success): "<label>: k/n <unit>" every `every_s` seconds and at the end of work that took as long,
so a user watching a command that works for minutes before its first result (a cold world's oracle
searches and replays) sees it move."""

from __future__ import annotations

import logging
import time


class Ticker:
    """Counts finished items and logs the line when `every_s` has passed since the last one, and at the last
    item when the whole took that long (work done in seconds stays quiet)."""

    def __init__(self, log: logging.Logger, label: str, total: int, unit: str, every_s: float = 10.0) -> None:
        self.log, self.label, self.total, self.unit, self.every_s = log, label, total, unit, every_s
        self.done = 0
        self.started = self._last = time.monotonic()

    def tick(self, note: str = "") -> None:
        """One more item finished; `note` (e.g. "2 failed") ends the line."""
        self.done += 1
        now = time.monotonic()
        if now - self._last >= self.every_s or (self.done == self.total and now - self.started >= self.every_s):
            self._last = now
            tail = f", {note}" if note else ""
            self.log.info("%s: %d/%d %s in %.0f s%s", self.label, self.done, self.total, self.unit,
                          now - self.started, tail)
