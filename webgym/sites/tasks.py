"""Goals of the synthetic sites as tasks: task text, exact rubric, and the JSONL the ingest reads.

A goal's predicate is a list of fact groups; its rubric (schemas/rubric.py) keeps the groups, turns
each fact's condition into a sentence, and stores the condition itself, with data lookups
resolved to literals, as that fact's check (a JSON string). Checks read only the final state
snapshot and the answer, so the verifier needs neither the browser nor the spec; a question
goal's answer check also carries `evidence` (where the answer is on screen) for the oracle. Any
subset of groups is again a goal predicate, which is what WebGym's decomposition relies on.

`webgym sites export-tasks PATH` writes one JSON object per line, one line per goal, for the
`synthetic` ingest adapter:

    site            short name of the site, e.g. "shop-a"
    hostname        host name of the site, e.g. "shop-a.test" (the browser maps it to the server)
    goal_id         id of the goal, unique within the site
    source_id       "<site>/<goal_id>", unique over all sites
    text            the task instruction (an LLM's rephrasing with --rephrase)
    template_text   the instruction as the spec writes it
    start_url       where the episode starts, e.g. "http://shop-a.test/"
    rubric          {"groups": [{"description", "facts": [str], "checks": [JSON str]}]}
    difficulty      number of facts; band: easy (1-3 facts), medium (4-6), hard (7+)
    step_limit      horizon of the band: 10, 20 or 30 steps
    oracle_length   steps of the shortest solution, the final `answer` included
    reference_answer    the expected answer of a question goal, else null
    domain, subdomain   the site's domain ("shopping", "travel", "email", ...) and topic
    title, graph        the site's brand name and the name of its FSM graph
    family              the site's family (family.py; a hand-written site's is its graph)
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemas.rubric import FactGroup, Rubric
from schemas.values import HORIZONS, difficulty_band
from webgym.sites.expr import Compiler, Record, SpecError

if TYPE_CHECKING:
    from webgym.llm.client import LLM
    from webgym.sites.machine import Machine
    from webgym.sites.site import Site
    from webgym.sites.spec import GoalSpec

log = logging.getLogger(__name__)

Rephrase = Callable[["Site", "GoalSpec", str], str]
"""(site, goal, template text) -> the text the task is given with."""



def literal(value: Any) -> Any:
    """A frozen value written back as an expression (records as {record: ...})."""
    if isinstance(value, Record):
        return {"record": {k: literal(v) for k, v in value}}
    if isinstance(value, tuple):
        return [literal(v) for v in value]
    return value


def resolve_check(machine: Machine, fact: dict[str, Any], loc: str) -> dict[str, Any]:
    """A goal fact as a self-contained check: static values become literals; it must then compile
    without data or views (what the verifier has)."""
    check = {k: v for k, v in fact.items() if k != "fact"}
    if "value" in check:
        value = machine.compiler.expr(check["value"], f"{loc}.value")
        if value.static:
            check["value"] = literal(value.fn(None))
    if "evidence" in check:
        if "answer" not in check:
            raise SpecError(f"{loc}.evidence: only answer facts carry evidence")
        Compiler(machine.index, machine.tables, frozenset(machine.views),
                 view_reads=machine.compiler.view_reads).conditions(check["evidence"], f"{loc}.evidence")
    bare = {k: v for k, v in check.items() if k != "evidence"}
    Compiler(machine.index, allow_answer=True).condition(bare, loc)
    return check


def _quote(value: Any) -> str:
    return f"“{value}”" if isinstance(value, str) else str(value)


def describe_value(machine: Machine, var: str | None, value: Any) -> str:
    """Words for a value: labels of ids, quoted text, records as 'name (field value)'."""
    if isinstance(value, dict) and "record" in value:
        fields = value["record"]
        head = machine.label(var, fields.get("id")) if "id" in fields else ""
        rest = ", ".join(f"{k} {describe_value(machine, None, v)}" for k, v in fields.items() if k != "id")
        return f"{head} ({rest})" if head and rest else head or rest
    if isinstance(value, list):
        return ", ".join(describe_value(machine, var, v) for v in value) or "nothing"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    label = machine.label(var, value)
    if label != str(value):
        return label
    spec = machine.vars[var].spec if var in machine.vars else None
    return _quote(value) if spec is None or spec.type == "text" else str(value)


OP_WORDS: dict[str, str] = {
    "eq": "is {v}", "neq": "is not {v}", "gt": "is more than {v}", "gte": "is at least {v}",
    "lt": "is less than {v}", "lte": "is at most {v}", "in": "is one of {v}", "oneof": "is one of {v}",
    "not_in": "is none of {v}", "contains": "includes {v}", "contains_all": "includes all of {v}", "lacks": "does not include {v}",
    "length_gt": "holds more than {v} item(s)", "length_eq": "holds exactly {v} item(s)",
    "exists": "is filled in", "not_null": "is set", "number_eq": "is {v}"}


def fact_text(machine: Machine, fact: dict[str, Any]) -> str:
    """The sentence a rubric shows for a fact; an explicit 'fact' text wins."""
    if fact.get("fact"):
        return fact["fact"]
    op, value = fact["op"], fact.get("value")
    if "answer" in fact:
        words = {"contains": "mentions {v}", "eq": "is {v}", "number_eq": "gives {v}"}.get(op, OP_WORDS[op])
        return "The answer " + words.format(v=describe_value(machine, None, value))
    if "page" in fact:
        pages = machine.spec.pages
        title = pages[value].title if op == "eq" and value in pages else describe_value(machine, None, value)
        return f"The browser ends on the {title} page" if op == "eq" else f"The page {OP_WORDS[op].format(v=title)}"
    if "var" not in fact:
        raise SpecError(f"fact {fact!r}: facts on expressions need a 'fact' text")
    var = fact["var"]
    subject = machine.vars[var].spec.description
    if op in ("eq", "neq") and isinstance(value, bool):
        # Booleans are described as statements ("the order is placed"): say whether it holds.
        holds = value == (op == "eq")
        return subject[:1].upper() + subject[1:] if holds else f"It is not the case that {subject}"
    return (subject[:1].upper() + subject[1:] + " " +
            OP_WORDS[op].format(v=describe_value(machine, var, value)))


def goal_rubric(machine: Machine, goal: GoalSpec, where: str = "") -> Rubric:
    """The goal's rubric: one fact group per predicate group, each fact with its exact check."""
    groups = []
    for g, group in enumerate(goal.groups):
        facts, checks = [], []
        for f, fact in enumerate(group.facts):
            loc = f"{where}goals[{goal.id}].groups[{g}].facts[{f}]"
            if "expr" in fact and not fact.get("fact"):
                raise SpecError(f"{loc}: facts on expressions need a 'fact' text")
            check = resolve_check(machine, fact, loc)
            facts.append(fact_text(machine, {**check, "fact": fact.get("fact")}))
            checks.append(json.dumps(check, sort_keys=True))
        groups.append(FactGroup(description=group.description, facts=facts, checks=checks))
    return Rubric(groups=groups)


def expected_answer(checks: list[dict[str, Any]]) -> str | None:
    """What the answer checks among `checks` expect (question goals), else None."""
    parts = []
    for check in checks:
        if "answer" not in check:
            continue
        value = check.get("value")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        parts.append(", ".join(map(str, value)) if isinstance(value, list) else str(value))
    return "; ".join(parts) or None


def reference_answer(rubric: Rubric) -> str | None:
    """The expected answer of a question goal, from its rubric's checks."""
    return expected_answer([json.loads(check) for group in rubric.groups for check in group.checks or []])


def task_text(site: Site, goal: GoalSpec) -> str:
    return goal.text.replace("{title}", site.spec.title).replace("{hostname}", site.spec.hostname)


def start_url(site: Site) -> str:
    """Where episodes start; the browser maps the host name to the site server (any port)."""
    return f"http://{site.spec.hostname}/"


def task_record(site: Site, goal: GoalSpec, rephrase: Rephrase | None = None) -> dict[str, Any]:
    rubric = site.rubric(goal.id)
    band = difficulty_band(rubric.n_facts)
    template = task_text(site, goal)
    return {
        "site": site.spec.name, "hostname": site.spec.hostname, "goal_id": goal.id,
        "source_id": f"{site.spec.name}/{goal.id}", "text": rephrase(site, goal, template) if rephrase else template,
        "template_text": template, "start_url": start_url(site), "rubric": rubric.model_dump(),
        "difficulty": rubric.n_facts, "band": band, "step_limit": HORIZONS[band],
        "oracle_length": site.oracle_path(goal.id).length, "reference_answer": reference_answer(rubric),
        "domain": site.spec.domain, "subdomain": site.spec.subdomain, "title": site.spec.title,
        "graph": site.spec.graph, "family": site.spec.family,
    }


def two_step_records(sites: list[Site], count: int) -> list[dict[str, Any]]:
    """The first goal of difficulty 1 whose oracle path takes two steps (open a page, then answer) of each
    site, in the given order, until `count`: tasks a small random model learns in minutes on a CPU
    (benchmarks/vlm_path.py, the vlm-cpu nightly test)."""
    chosen = []
    for site in sites:
        records = (task_record(site, goal) for goal in site.spec.goals)
        easy = next((r for r in records if r["difficulty"] == 1 and r["oracle_length"] == 2), None)
        if easy is not None:
            chosen.append(easy)
        if len(chosen) == count:
            break
    return chosen


def task_row(record: dict[str, Any], split: str, created_at: dt.datetime) -> dict[str, Any]:
    """A goal's record as a row of the tasks table in `split`: the task build_taskset makes of it, for a lake
    written directly (no dedup, decomposition or split draw)."""
    from schemas.tasks import Task

    return Task(task_id=record["source_id"], source="synthetic", source_id=record["source_id"], text=record["text"],
                website=record["hostname"], start_url=record["start_url"], difficulty=record["difficulty"],
                domain=record["domain"], split=split, rubric=record["rubric"], created_at=created_at).model_dump()


def task_records(sites: list[Site], rephrase: Rephrase | None = None) -> list[dict[str, Any]]:
    """Every goal of every site as the record the `synthetic` ingest adapter reads."""
    return [task_record(site, goal, rephrase) for site in sites for goal in site.spec.goals]


def export_tasks(sites: list[Site], path: str | Path, rephrase: Rephrase | None = None) -> int:
    """Write every goal of every site as one JSON line; return the number of lines."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    records = task_records(sites, rephrase)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return len(records)


def llm_rephraser(llm: LLM) -> Rephrase:
    """Rephrasing by the LLM's `site-tasks` endpoints (prompt site_task_rephrase); a failed call or an
    empty answer keeps the template text, with a warning."""
    from webgym.llm.client import LLMCallError
    from webgym.llm.prompts import load_prompt

    prompt = load_prompt("site_task_rephrase")
    llm.require("site-tasks")

    def rephrase(site: Site, goal: GoalSpec, text: str) -> str:
        facts = "\n".join(f"- {fact}" for group in site.rubric(goal.id).groups for fact in group.facts)
        messages = prompt.render(site=f"{site.spec.title} ({site.spec.hostname})", task=text, facts=facts)
        try:
            answer = (llm.chat_sync("site-tasks", messages, prompt=prompt).text or "").strip()
        except LLMCallError as error:
            log.warning("%s/%s: kept the template text, rephrasing failed: %s", site.name, goal.id, error)
            return text
        return answer or text
    return rephrase
