"""Operation-specific queues (WebGym appendix B.1): one bounded queue per operation type, no
priority between types, so navigations never starve screenshots and the policy never idles
behind a burst of browser work. Each use is timed (service time and time spent waiting)."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

OPS = ("navigate", "screenshot", "execute", "policy")


@dataclass
class OpTimer:
    seconds: float = 0.0
    """Time in service, excluding the wait for a free slot."""
    waited: float = 0.0


class OpQueues:
    """A bounded semaphore per operation type, with totals for the benchmark's time split."""

    def __init__(self, sizes: dict[str, int]) -> None:
        unknown = set(sizes) - set(OPS)
        if unknown:
            raise ValueError(f"unknown operation(s) {sorted(unknown)}; operations are {OPS}")
        self._slots = {op: asyncio.Semaphore(sizes.get(op, 1_000_000)) for op in OPS}
        self.busy: dict[str, float] = defaultdict(float)
        self.waited: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)

    @asynccontextmanager
    async def use(self, op: str) -> AsyncIterator[OpTimer]:
        timer = OpTimer()
        queued = time.monotonic()
        async with self._slots[op]:
            started = time.monotonic()
            timer.waited = started - queued
            try:
                yield timer
            finally:
                timer.seconds = time.monotonic() - started
                self.busy[op] += timer.seconds
                self.waited[op] += timer.waited
                self.count[op] += 1
