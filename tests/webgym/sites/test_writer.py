"""The LLM family writer against the scripted server: a bad answer is fed back and repaired, and
only a family that passes is written."""

from __future__ import annotations

import pytest
import yaml

from tests.webgym.sites.conftest import tip_jar
from webgym.llm.scripted_server import Reply
from webgym.sites.family import load_families
from webgym.sites.writer import FamilyNotWritten, answer_yaml, example_family, write_family

BROKEN = tip_jar(goals=[{"id": "tip-twice", "text": "Tip twice on {title}.",
                         "groups": [{"description": "tips", "facts": [{"var": "tipz", "op": "eq", "value": 2}]}]}])
"""The tip jar with a goal on a variable the graph does not have."""


def fenced(raw: dict) -> str:
    return f"Here is the family:\n```yaml\n{yaml.safe_dump(raw, sort_keys=False)}```\n"


def test_a_bad_answer_is_fed_back_and_the_repaired_family_is_written(server, llm, families_dir):
    server.add(Reply(text=fenced(BROKEN)), times=1)
    server.add(Reply(text=fenced(tip_jar())), contains="could not be used")
    written = write_family(llm, "a tip jar with a thank-you switch", directory=families_dir)
    assert written.answers == 2
    assert any("unknown variable 'tipz'" in problem for problem in written.rejected[0])
    assert written.path == families_dir / "tipjar.yaml"
    assert load_families(families_dir)["tipjar"].goals == tip_jar()["goals"]
    first, second = server.requests
    assert "a tip jar with a thank-you switch" in first.last_user_text and first.purpose == "sites"
    assert "unknown variable 'tipz'" in second.last_user_text
    assert [m["role"] for m in second.messages][-2:] == ["assistant", "user"]


def test_nothing_is_written_when_every_answer_fails(server, llm, families_dir):
    server.add(Reply(text=fenced(BROKEN)))
    with pytest.raises(FamilyNotWritten, match=r"(?s)after 2 answer\(s\).*family tipjar seed 0 \(tipjar-g0\): goals\[tip-twice\].*unknown variable 'tipz'"):
        write_family(llm, "a tip jar", directory=families_dir, attempts=2)
    assert len(server.requests) == 2
    assert not families_dir.exists() or not list(families_dir.iterdir())


def test_a_family_whose_sites_fail_their_search_is_sent_back_with_the_goal_named(server, llm, families_dir):
    unreachable = tip_jar(goals=[{"id": "tip-nine", "text": "Tip nine times on {title}.",
                                  "groups": [{"description": "tips", "facts": [{"var": "tips", "op": "eq", "value": 9}]}]}])
    server.add(Reply(text=fenced(unreachable)), times=1)
    server.add(Reply(text=fenced(tip_jar())))
    written = write_family(llm, "a tip jar", directory=families_dir, seeds=(0,))
    assert written.rejected == [["tipjar-g0 (family tipjar, seed 0), goal tip-nine: unreachable: no path within the easy "
                                 "band's 10 steps (1 facts)"]]


def test_the_name_of_a_shipped_family_is_refused(server, llm, families_dir):
    server.add(Reply(text=fenced(tip_jar(family="shop"))), times=1)
    server.add(Reply(text=fenced(tip_jar())))
    written = write_family(llm, "a tip jar", directory=families_dir, seeds=(0,))
    assert written.rejected == [["family: 'shop' already exists; choose another name"]]


def test_the_example_is_a_whole_family_with_its_graph_inline():
    example = answer_yaml(f"```yaml\n{example_family()}\n```")
    assert example["family"] == "library" and "pages" in example["graph"] and example["goals"]
