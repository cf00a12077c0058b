"""The llm_calls ledger: one row per request attempt or cache hit, written through the lake."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pandas as pd

from schemas.llm_calls import LlmCall
from webgym.lake import Lake
from webgym.lake.stream import StreamWriter


@dataclass
class LedgerTotals:
    """Running totals of calls: a client's (for a stage's log line) or a caller's meter (one judgment's cost)."""

    calls: int = 0
    cached: int = 0
    errors: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0

    def add(self, call: LlmCall) -> None:
        self.calls += 1
        self.cached += call.cached
        self.errors += call.error is not None
        self.tokens_in += call.tokens_in or 0
        self.tokens_out += call.tokens_out or 0
        self.cost_usd += call.cost_usd or 0.0

    def __str__(self) -> str:
        return (f"{self.calls} LLM call(s), {self.cached} from cache, {self.errors} error(s), "
                f"{self.tokens_in}+{self.tokens_out} tokens, ${self.cost_usd:.4f}")


class Ledger:
    """Journals every row the moment it is recorded (a crash loses none: the next writer or
    `webgym lake recover` commits it) and commits a part of llm_calls per `flush_rows` rows and at close."""

    def __init__(self, lake: Lake, run_id: str, flush_rows: int) -> None:
        self.totals = LedgerTotals()
        self._writer: StreamWriter | None = lake.stream(run_id, batch_rows=flush_rows).__enter__()
        self._lock = threading.Lock()

    def record(self, call: LlmCall) -> None:
        with self._lock:
            if self._writer is None:
                raise RuntimeError("ledger is closed: record calls before LLM.close()")
            self._writer.append({"llm_calls": pd.DataFrame([call.model_dump()])})
            self.totals.add(call)

    def flush(self) -> None:
        """Commit every journaled row as a part."""
        with self._lock:
            if self._writer is not None:
                self._writer.flush()

    def close(self) -> None:
        """Commit what is journaled and release the journal (idempotent)."""
        with self._lock:
            if self._writer is not None:
                self._writer.__exit__(None, None, None)
                self._writer = None
