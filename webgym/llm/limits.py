"""Per-endpoint rate limits (requests and tokens per minute) as async token buckets."""

from __future__ import annotations

import asyncio
import time


class TokenBucket:
    """Lets `per_minute` units through a minute, paced: at most one second's worth at once.

    Pacing (instead of a minute-sized burst) keeps a fresh client from tripping the server's own
    limiter. A request larger than the bucket waits for a full bucket and leaves a debt, so big
    prompts are slowed, never refused. Waiters are served in arrival order.
    """

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self._stamp = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def take(self, amount: float) -> None:
        """Wait until `amount` may pass, then spend it."""
        async with self._lock:
            need = min(amount, self.capacity)
            self._refill()
            while self.level < need:
                await asyncio.sleep((need - self.level) / self.rate)
                self._refill()
            self.level -= amount

    def adjust(self, amount: float) -> None:
        """Correct an estimate once the real figure is known (positive: spend more; negative: refund)."""
        self._refill()
        self.level = min(self.capacity, self.level - amount)
