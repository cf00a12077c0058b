"""llm_calls rows reach the lake in batches, and the warehouse's cost view reads them."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.webgym.llm.conftest import endpoint, user
from webgym import warehouse
from webgym.config import ModelPrice
from webgym.llm.scripted_server import Reply


def test_rows_are_written_in_batches_and_on_close(make_llm, server, lake):
    server.add(Reply(text="ok"))
    llm = make_llm(endpoint(server.base_url), ledger_flush_rows=2,
                   prices={"scripted": ModelPrice(input_per_mtok=1.0, output_per_mtok=1.0)})
    for i in range(5):
        llm.chat_sync("rubric", user(f"q{i % 4}"))
    assert lake.count("llm_calls") == 4 and len(lake.parts("llm_calls")) == 2
    llm.close()
    assert lake.count("llm_calls") == 5 and len(lake.parts("llm_calls")) == 3
    assert str(llm.ledger.totals).startswith("5 LLM call(s), 1 from cache, 0 error(s)")
    (row,) = warehouse.query(lake, "SELECT * FROM llm_cost_by_purpose").to_dict("records")
    assert (row["purpose"], row["calls"], row["cache_hits"], row["errors"]) == ("rubric", 5, 1, 0)
    assert row["cost_usd"] > 0


def test_a_crashed_process_loses_no_ledger_row(lake):
    crash = textwrap.dedent("""
        import datetime as dt, os, sys
        from schemas.llm_calls import LlmCall
        from webgym.lake import Lake
        from webgym.llm.ledger import Ledger
        ledger = Ledger(Lake(sys.argv[1]), "crash", flush_rows=256)
        for i in range(5):
            ledger.record(LlmCall(call_id=f"c{i}", request_hash="h", endpoint="http://e", model="m",
                                  purpose="rubric", cached=False, called_at=dt.datetime.now(dt.UTC)))
        os._exit(1)  # no close, no flush
        """)
    subprocess.run([sys.executable, "-c", crash, lake.root], check=False)
    assert lake.count("llm_calls") == 0
    lake.recover()
    assert sorted(lake.read_table("llm_calls")["call_id"]) == [f"c{i}" for i in range(5)]


def test_a_meter_counts_only_the_calls_it_was_passed_to(make_llm, server):
    from pydantic import BaseModel

    from webgym.llm.ledger import LedgerTotals

    class Answer(BaseModel):
        ok: bool

    server.add(Reply(text="not json"), contains="strict", times=1)
    server.add(Reply.json({"ok": True}))
    llm = make_llm(endpoint(server.base_url), prices={"scripted": ModelPrice(input_per_mtok=1.0, output_per_mtok=1.0)})
    mine, other = LedgerTotals(), LedgerTotals()
    assert llm.structured_sync("judge-facts", user("strict"), Answer, meter=mine) == Answer(ok=True)
    llm.chat_sync("judge-facts", user("elsewhere"), meter=other)
    spent = mine.cost_usd
    llm.structured_sync("judge-facts", user("strict"), Answer, meter=mine)  # both answers again, from the cache
    assert (mine.calls, mine.errors, mine.cached) == (4, 2, 2)
    assert spent > 0 and mine.cost_usd == spent and other.calls == 1
    assert llm.ledger.totals.calls == 5
