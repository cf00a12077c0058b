"""The llm_calls ledger: one row per request attempt or cache hit, written through the lake."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pandas as pd

from schemas.llm_calls import LlmCall
from webgym.lake import Lake


@dataclass
class LedgerTotals:
    """Running totals of one client's calls, for a stage's log line."""

    calls: int = 0
    cached: int = 0
    errors: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0

    def __str__(self) -> str:
        return (f"{self.calls} LLM call(s), {self.cached} from cache, {self.errors} error(s), "
                f"{self.tokens_in}+{self.tokens_out} tokens, ${self.cost_usd:.4f}")


class Ledger:
    """Buffers rows and appends them to llm_calls as one part per `flush_rows` rows and at `flush`."""

    def __init__(self, lake: Lake, run_id: str, flush_rows: int) -> None:
        self.lake, self.run_id, self.flush_rows = lake, run_id, flush_rows
        self.totals = LedgerTotals()
        self._pending: list[LlmCall] = []
        self._lock = threading.Lock()

    def record(self, call: LlmCall) -> None:
        with self._lock:
            self._pending.append(call)
            self.totals.calls += 1
            self.totals.cached += call.cached
            self.totals.errors += call.error is not None
            self.totals.tokens_in += call.tokens_in or 0
            self.totals.tokens_out += call.tokens_out or 0
            self.totals.cost_usd += call.cost_usd or 0.0
            full = len(self._pending) >= self.flush_rows
        if full:
            self.flush()

    def flush(self) -> None:
        """Write every buffered row (no-op when there are none)."""
        with self._lock:
            rows, self._pending = self._pending, []
        if rows:
            self.lake.write_table("llm_calls", pd.DataFrame([r.model_dump() for r in rows]), self.run_id)
