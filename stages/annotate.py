"""Annotate: seed tasks -> tasks, with website and start URL, domain and subdomain, and a rubric.

Per seed task (WebGym 3.2, Algorithm 1 lines 3-5):
- website and start URL: the source's own when given; else a URL or a bare domain in the text
  ("... on allrecipes.com"); else the LLM's answer (`https://<website>/` is then the start URL,
  unless the source gave one, e.g. GAIA's search engine page);
- domain and subdomain in `schemas.tasks.TAXONOMY`: the source's labels when they name a taxonomy
  entry (or a label of `SOURCE_LABELS`, e.g. the synthetic sites' own), else the LLM's;
- rubric as fact groups: the source's own when it ships one (WebGym's rubrics, already converted by
  the ingest adapter: a string becomes one group with one fact, a list of strings one group per
  string; synthetic goals' exact rubrics), else the LLM's. Difficulty is the total number of facts;
  the source's own difficulty label stays in source_difficulty.
A task that lacks any of website, taxonomy domain or rubric costs one structured LLM call (prompt
annotate_task), which answers all three; what the source gave wins over the answer. Synthetic tasks
never call the LLM. An answer that stays invalid after its retries, or a failed call, makes the task
a reported bad record; the others go on. `pending_seeds` leaves out seeds whose task exists, so a
rerun never annotates (nor sends to the LLM) a task twice.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, Field, field_validator, model_validator

from schemas.rubric import FactGroup, Rubric
from schemas.tasks import SCHEMA, TAXONOMY, Task, task_id_for
from schemas.values import website_of
from stages.revisions import revision_numbers
from webgym.config import AnnotateConfig
from webgym.llm.client import LLM, LLMCallError
from webgym.llm.prompts import load_prompt
from webgym.llm.structured import StructuredFailure

NO_LLM_SOURCES = ("synthetic",)
"""Sources whose tasks come complete (exact rubrics, known sites): never sent to the LLM."""

SUBDOMAINS = {sub: domain for domain, subs in TAXONOMY.items() for sub in subs}

SOURCE_LABELS: dict[str, tuple[str, str | None]] = {
    # the synthetic site families' labels (webgym/sites/families, words/), written before the real taxonomy
    "general merchandise": ("Lifestyle & Leisure", "Shopping"), "home & garden": ("Lifestyle & Leisure", "Shopping"),
    "electronics & tech": ("Lifestyle & Leisure", "Shopping"),
    "health & fitness": ("Lifestyle & Leisure", "Health & Medicine"),
    "hobbies & crafts": ("Lifestyle & Leisure", "Hobbies & DIY"),
    "food & dining": ("Lifestyle & Leisure", "Food & Cooking"),
    "communication & social": ("Misc.", "General Info."),
    "movies & tv": ("Entertainment", "Films & TV Shows"),
    "games & sports": ("Entertainment", "Gaming & Virtual Worlds"),
    "flights": ("Travel & Transportation", "Travel & Accommodation"),
    "ground transportation": ("Travel & Transportation", "Travel & Accommodation"),
    "lodging": ("Travel & Transportation", "Travel & Accommodation"),
    "trip planning & attractions": ("Travel & Transportation", "Outdoor & Recreation"),
    "jobs & careers": ("Career & Education", "Jobs & Career"),
    "science & technology": ("Science & Research", "Technology & Science"),
    "news & reference": ("Misc.", "News"), "banking & finance": ("Misc.", "Finance & Investment"),
    "travel": ("Travel & Transportation", None), "education & research": ("Science & Research", None),
    "work & finance": ("Misc.", None),
    # the hand-written sites' labels (webgym/sites/specs: domain, subdomain)
    "homeware": ("Lifestyle & Leisure", "Shopping"), "electronics": ("Lifestyle & Leisure", "Shopping"),
    "trains": ("Travel & Transportation", "Travel & Accommodation"),
    "email": ("Misc.", "General Info."), "social": ("Misc.", "General Info."),
    "personal mail": ("Misc.", "General Info."), "work mail": ("Misc.", "General Info."),
    "hobby forum": ("Lifestyle & Leisure", "Hobbies & DIY"),
    "developer community": ("Science & Research", "Technology & Science"),
    "food": ("Lifestyle & Leisure", "Food & Cooking"), "recipes": ("Lifestyle & Leisure", "Food & Cooking"),
    "plant-based recipes": ("Lifestyle & Leisure", "Food & Cooking"),
    "information": ("Misc.", "General Info."),
    "account": ("Misc.", "Finance & Investment"), "banking settings": ("Misc.", "Finance & Investment"),
    "subscription settings": ("Misc.", "Finance & Investment"),
}
"""Source labels that are not taxonomy names, mapped onto the taxonomy (lower-case keys): the synthetic
sites' own labels, so their families keep their wording; a subdomain label is tried before its domain
label."""

_URL = re.compile(r"https?://[^\s<>\"'()\[\]{}]+", re.IGNORECASE)
_BARE_DOMAIN = re.compile(r"(?<![\w@./-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+([a-z]{2,24}))(?![\w-]|\.\w)",
                          re.IGNORECASE)
_TLDS = frozenset(
    "com org net edu gov mil int io co ai app dev info biz me tv us uk ca au de fr es it nl se no fi dk pl ch at be "
    "ie pt cz ru ua jp cn kr in br mx ar cl nz za sg hk tw il tr gr hu ro bg sk si hr rs lt lv ee is lu ae sa "
    "eg ng ke th vn id my ph pk bd ir".split())
"""Top-level domains a bare domain in a task's text must end with (so 'Node.js' or 'e.g.' are not websites)."""


@dataclass(frozen=True)
class Site:
    """Where a task is done: the host name and the URL an episode starts from."""

    website: str | None
    start_url: str | None


def site_in_text(text: str) -> Site | None:
    """The first URL in `text` (its host and the URL itself), else the first bare domain with a known
    top-level domain (start URL https://<domain>/); None when the text names no website."""
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(".,;:!?")
        host = website_of(url)
        if host:
            return Site(host, url)
    for match in _BARE_DOMAIN.finditer(text):
        if match.group(2).lower() in _TLDS:
            host = website_of(match.group(1))
            if host:
                return Site(host, f"https://{match.group(1).lower()}/")
    return None


def known_site(seed: dict[str, Any]) -> Site:
    """The website and start URL a seed task gives, by its fields or in its text (either may be None)."""
    website, start_url = seed.get("website"), seed.get("start_url")
    if website is None:
        found = site_in_text(seed["text"])
        if found is not None:
            return Site(found.website, start_url or found.start_url)
    return Site(website, start_url or _home(website))


def _home(website: str | None) -> str | None:
    """https://<website>/ for a real host name (not WebArena's __PLACEHOLDER__ hosts)."""
    return f"https://{website}/" if website and not website.startswith("__") else None


def taxonomy_labels(domain: str | None, subdomain: str | None) -> tuple[str | None, str | None]:
    """A source's domain and subdomain as a taxonomy (domain, subdomain); (None, None) when neither
    names a taxonomy entry or a `SOURCE_LABELS` label."""
    by_name = {name.casefold(): name for name in [*TAXONOMY, *SUBDOMAINS]}
    for label in (subdomain, domain):
        if not label:
            continue
        name = by_name.get(label.strip().casefold())
        if name in SUBDOMAINS:
            return SUBDOMAINS[name], name
        if name in TAXONOMY:
            return name, None
        if label.strip().casefold() in SOURCE_LABELS:
            return SOURCE_LABELS[label.strip().casefold()]
    return None, None


class AnsweredGroup(BaseModel):
    """One fact group of the rubric."""

    description: str = Field(min_length=1, description="The criterion this group checks, in a few words.")
    facts: list[str] = Field(min_length=1, description="Atomic, checkable facts that must all hold.")

    @field_validator("facts")
    @classmethod
    def _facts_have_text(cls, facts: list[str]) -> list[str]:
        if any(not fact.strip() for fact in facts):
            raise ValueError("every fact must be non-empty text")
        return [fact.strip() for fact in facts]


class Annotation(BaseModel):
    """The LLM's answer for one task: website, taxonomy domain and subdomain, rubric."""

    website: str | None = Field(description="Host name of the website the task is done on, e.g. "
                                            "'www.allrecipes.com'; null when no single website fits.")
    domain: Literal[tuple(TAXONOMY)] = Field(description="Domain of the taxonomy.")  # type: ignore[valid-type]
    subdomain: Literal[tuple(SUBDOMAINS)] = Field(description="Subdomain, one of the domain's.")  # type: ignore[valid-type]
    groups: list[AnsweredGroup] = Field(min_length=1, description="The rubric: fact groups, each one criterion.")

    @model_validator(mode="after")
    def _consistent(self) -> Annotation:
        if SUBDOMAINS[self.subdomain] != self.domain:
            raise ValueError(f"subdomain {self.subdomain!r} belongs to domain {SUBDOMAINS[self.subdomain]!r}, "
                             f"not {self.domain!r}; pick a subdomain of {self.domain!r}: {list(TAXONOMY[self.domain])}")
        if self.website is not None and website_of(self.website) is None:
            raise ValueError(f"website {self.website!r} is not a host name such as example.com; give one or null")
        return self

    def rubric(self) -> Rubric:
        return Rubric(groups=[FactGroup(description=g.description, facts=g.facts) for g in self.groups])


@dataclass(frozen=True)
class BadTask:
    """A seed task that could not be annotated, and why (it is retried by the next run)."""

    source: str
    source_id: str
    reason: str

    def __str__(self) -> str:
        return f"{self.source}/{self.source_id}: {self.reason}"


@dataclass
class Annotated:
    """What `annotated_tasks` made of a batch: task rows, bad records, how many asked the LLM."""

    rows: pd.DataFrame
    bad: list[BadTask] = field(default_factory=list)
    asked: int = 0


def needs_llm(seed: dict[str, Any]) -> bool:
    """Whether a seed task lacks something only the LLM can give (a website, a taxonomy domain, a
    rubric); never for `NO_LLM_SOURCES`."""
    if seed["source"] in NO_LLM_SOURCES:
        return False
    domain, _ = taxonomy_labels(seed.get("domain"), seed.get("subdomain"))
    return seed.get("rubric") is None or domain is None or known_site(seed).website is None


def asks_llm(seeds: pd.DataFrame) -> bool:
    """Whether any of these seed tasks needs the LLM (so a driver opens a client only then)."""
    return any(needs_llm(seed) for seed in _records(seeds))


def task_row(seed: dict[str, Any], answer: Annotation | None, now: dt.datetime) -> dict[str, Any]:
    """The tasks row of a seed task; the source's website, labels and rubric win over the answer's. A seed
    whose stale date the LLM rewrote (stages/stale.py) brings its source text as original_text."""
    site = known_site(seed)
    if site.website is None and answer is not None and answer.website:
        website = website_of(answer.website)
        site = Site(website, site.start_url or _home(website))
    domain, subdomain = taxonomy_labels(seed.get("domain"), seed.get("subdomain"))
    if domain is None and answer is not None:
        domain, subdomain = answer.domain, answer.subdomain
    rubric = Rubric.model_validate(seed["rubric"]) if seed.get("rubric") is not None else (
        answer.rubric() if answer is not None else None)
    return Task(task_id=task_id_for(seed["source"], seed["source_id"], revision=seed.get("revision")),
                revision=seed.get("revision"), published=seed.get("published"), source=seed["source"],
                source_id=seed["source_id"], text=seed["text"], original_text=seed.get("original_text"),
                text_writer="llm" if seed.get("original_text") else "source", stale_phrase=seed.get("stale_phrase"),
                stale_as_of=seed.get("stale_as_of"), website=site.website, start_url=site.start_url,
                domain=domain, subdomain=subdomain, difficulty=rubric.n_facts if rubric else None,
                source_difficulty=seed.get("source_difficulty"), rubric=rubric,
                reference_answer=seed.get("reference_answer"), evaluation=seed.get("evaluation"),
                created_at=now).model_dump()


def taxonomy_text() -> str:
    """The taxonomy as the prompt lists it: one domain a line with its subdomains."""
    return "\n".join(f"- {domain}: {'; '.join(subs)}" for domain, subs in TAXONOMY.items())


async def _ask(llm: LLM, seed: dict[str, Any], config: AnnotateConfig) -> Annotation | BadTask:
    prompt = load_prompt("annotate_task")
    messages = prompt.render(taxonomy=taxonomy_text(), task=seed["text"],
                             website=known_site(seed).website or "none given: infer it")
    try:
        answer = await llm.structured(config.purpose, messages, Annotation, prompt=prompt, temperature=0,
                                      max_tokens=config.max_tokens)
    except LLMCallError as error:
        return BadTask(seed["source"], seed["source_id"], str(error))
    if isinstance(answer, StructuredFailure):
        return BadTask(seed["source"], seed["source_id"], str(answer))
    return answer


def annotated_tasks(seeds: pd.DataFrame, llm: LLM | None, config: AnnotateConfig,
                    now: dt.datetime | None = None) -> Annotated:
    """One tasks row per seed task (original tasks: no parent, no split), with one concurrent LLM call
    per seed that `needs_llm` (`llm` may be None when none does); seeds whose call failed or whose
    answer stayed invalid are bad records instead of rows."""
    now = now or dt.datetime.now(dt.UTC)
    records = _records(seeds)
    asking = [s for s in records if needs_llm(s)]
    if asking and llm is None:
        raise ValueError(f"{len(asking)} seed task(s) need the LLM (e.g. {asking[0]['source']}/"
                         f"{asking[0]['source_id']}) but no LLM was given")

    async def ask_all() -> list[Annotation | BadTask]:
        return await asyncio.gather(*(_ask(llm, seed, config) for seed in asking))

    answers = dict(zip([(s["source"], s["source_id"]) for s in asking], asyncio.run(ask_all()) if asking else [],
                       strict=True))
    rows, bad = [], []
    for seed in records:
        answer = answers.get((seed["source"], seed["source_id"]))
        if isinstance(answer, BadTask):
            bad.append(answer)
        else:
            rows.append(task_row(seed, answer, now))
    frame = pd.DataFrame(rows, columns=SCHEMA.columns) if rows else SCHEMA.empty_frame()
    return Annotated(frame, bad, len(asking))


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts with None, not NaN, for missing values."""
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def pending_seeds(seeds: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """The seed tasks (already without their duplicates) that have no task in the tasks table yet."""
    done = set(tasks["task_id"])
    ids = [task_id_for(s, i, revision=r) for s, i, r in zip(seeds["source"], seeds["source_id"],
                                                              revision_numbers(seeds), strict=True)]
    return seeds[[i not in done for i in ids]].reset_index(drop=True)
