"""Stale tasks: a task that plans something on a date that has passed cannot be done as written.

Online-Mind2Web and WebVoyager ask to book hotels "from March 15 to March 22, 2024" or flights
"departing on January 25, 2024"; Fara's evaluation rewrites such dates. `stale_phrase` finds, in a
task's text, a date that has passed on the "as of" date (taskset.stale.as_of), in a sentence that
plans something (books, reserves, schedules, travels, rents, attends...). A look-up of records about
a past date ("the closing price on March 17, 2023") or a sentence in the past tense ("What time was
the train on May 27, 2019 scheduled to arrive?") stays valid. The dates it reads:

- full dates: "March 20-27, 2024", "February 28 to March 2, 2024", "8 March 2024", "2024-03-12",
  "20/12/2023" (day/month or month/day: stale only when both readings have passed);
- months and seasons of a year: "December 2023", "Fall 2023 semester", "the winter of 2023";
- times anchored to a year: "the upcoming 2024 season" (the year's end).
A date without a year ("on December 25") and a time relative to the run ("tomorrow", "next month")
move with the clock and never go stale. The phrase found is kept on the row (stale_phrase).

`taskset build` then keeps the stale tasks (flagged), drops them, or has the LLM move their dates to
the future (`refreshed_seeds`, prompt refresh_task), keeping the source's text in original_text.

A reference answer goes stale too: FARA re-worded 86 WebVoyager tasks ("released in 2024" -> "in
2025") and ships the original answers with them. `stale_answers` finds the revisions whose reference
answer (and evaluation block) is the one an earlier-published revision gave for another text; `taskset
build` does not make tasks of them (no reward is paid on them) until a revision with its own answer
is ingested (refreshed).
"""

from __future__ import annotations

import asyncio
import calendar
import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field, model_validator

from stages.annotate import BadTask
from stages.revisions import publication_order
from webgym.config import StaleConfig
from webgym.llm.client import LLM, LLMCallError
from webgym.llm.prompts import load_prompt

_MONTHS = {name: i for i in range(1, 13) for name in
           (calendar.month_name[i].lower(), calendar.month_abbr[i].lower())} | {"sept": 9}
_MONTH = r"(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{}>\d{{1,2}})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_RANGE_TO = r"\s*(?:-|–|to|until|through|and)\s*"

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("month_day_year", re.compile(
        rf"\b{_MONTH.format('month')}\s+{_DAY.format('day')}"
        rf"(?:{_RANGE_TO}(?:{_MONTH.format('month2')}\s+)?{_DAY.format('day2')})?,?\s+{_YEAR}\b", re.I)),
    ("day_month_year", re.compile(
        rf"\b{_DAY.format('day')}\s+(?:of\s+)?{_MONTH.format('month')},?\s+{_YEAR}\b", re.I)),
    ("iso", re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>\d{2})-(?P<day>\d{2})\b")),
    ("numeric", re.compile(r"\b(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<year>(?:19|20)\d\d)\b")),
    ("month_year", re.compile(rf"\b{_MONTH.format('month')},?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    ("season_year", re.compile(
        rf"\b(?P<season>spring|summer|fall|autumn|winter)\s+(?:of\s+|semester\s+|term\s+|season\s+)?{_YEAR}\b", re.I)),
    ("anchored_year", re.compile(rf"\b(?:upcoming|coming|next|this)\s+(?:[\w-]+\s+){{0,2}}?{_YEAR}\b", re.I)),
]
"""Most specific first: a phrase matched by one is masked before the next looks."""

_PLANS = re.compile(
    r"\b(?:book(?:ing|ed)?|reserv\w*|check[- ]?(?:in|out)|stay\w*|hotels?|rooms?|flights?|fly|flying|depart\w*|"
    r"leav(?:e|es|ing)\s+on|return(?:s|ing)?\s+(?:on|flight|trip|date)|trips?|travel\w*|cruises?|"
    r"tickets?|schedul\w*|appointments?|availab\w*|pick[- ]?up|rent\w*|deliver\w*|events?|concerts?|attend\w*|"
    r"regist\w*|enrol\w*|semesters?|courses?|class(?:es)?|tours?|parking|permits?|upcoming)\b", re.I)
"""Words of a task that plans something on its dates (rather than looking up records of them)."""

_PAST = re.compile(r"\b(?:was|were|had|did|went)\b", re.I)
"""A sentence in the past tense tells of its date; it does not plan anything then."""

_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z])")

_SEASON_END = {"spring": (0, 5, 31), "summer": (0, 8, 31), "fall": (0, 12, 31), "autumn": (0, 12, 31),
               "winter": (1, 3, 31)}
"""Season -> (years after the named one, month, day) of its last day."""


def _last_day(year: int, month: int, day: int | None = None) -> dt.date | None:
    """The date (the month's last day without a day); None for an impossible one."""
    try:
        return dt.date(year, month, day or calendar.monthrange(year, month)[1])
    except ValueError:
        return None


def _end(kind: str, match: re.Match[str]) -> dt.date | None:
    """The last day a matched phrase names."""
    year = int(match["year"])
    if kind == "month_day_year":
        month = _MONTHS[(match["month2"] or match["month"]).lower()]
        return _last_day(year, month, int(match["day2"] or match["day"]))
    if kind == "day_month_year":
        return _last_day(year, _MONTHS[match["month"].lower()], int(match["day"]))
    if kind == "iso":
        return _last_day(year, int(match["month"]), int(match["day"]))
    if kind == "numeric":
        a, b = int(match["a"]), int(match["b"])
        return max((d for d in (_last_day(year, b, a), _last_day(year, a, b)) if d), default=None)
    if kind == "month_year":
        return _last_day(year, _MONTHS[match["month"].lower()])
    if kind == "season_year":
        after, month, day = _SEASON_END[match["season"].lower()]
        return dt.date(year + after, month, day)
    return dt.date(year, 12, 31)


def _sentence(text: str, at: int) -> str:
    """The sentence of `text` around position `at`."""
    starts = [0] + [m.end() for m in _SENTENCE_END.finditer(text) if m.end() <= at]
    end = next((m.end() for m in _SENTENCE_END.finditer(text, at)), len(text))
    return text[starts[-1]:end]


def stale_phrase(text: str, as_of: dt.date) -> str | None:
    """The first date phrase of `text` that ended before `as_of` in a sentence that plans something
    (module docstring); None otherwise."""
    if not _PLANS.search(text):
        return None
    masked, found = text, []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(masked):
            end, sentence = _end(kind, match), _sentence(text, match.start())
            if end is not None and end < as_of and _PLANS.search(sentence) and not _PAST.search(sentence):
                found.append((match.start(), text[match.start():match.end()]))
        masked = pattern.sub(lambda m: " " * len(m.group(0)), masked)
    return min(found)[1] if found else None


def stale_answers(seeds: pd.DataFrame) -> pd.Series:
    """Per row of `seeds` (every revision held: source, source_id, revision, published, text,
    reference_answer, evaluation), why its reference answer predates its text: 'reference answer of
    revision N, given for another wording', when an earlier-published revision of the task had the same
    answer and evaluation block with another text; None otherwise (or when there is no answer)."""
    why = pd.Series([None] * len(seeds), index=seeds.index, dtype=object)
    if seeds.empty:
        return why
    ordered = publication_order(seeds)
    answers = ordered["reference_answer"].astype(object).where(ordered["reference_answer"].notna(), None)
    blocks = ordered["evaluation"].astype(object).where(ordered["evaluation"].notna(), None)
    first_given: dict[tuple, tuple[int, str]] = {}  # (source, source_id, answer, block) -> (revision, its text)
    for index, source, source_id, revision, text, answer, block in zip(
            ordered.index, ordered["source"], ordered["source_id"], ordered["revision"].fillna(1), ordered["text"],
            answers, blocks, strict=True):
        if answer is None and block is None:
            continue
        earlier = first_given.setdefault((source, source_id, answer, block), (int(revision), text))
        if earlier[1] != text:
            why[index] = f"reference answer of revision {earlier[0]}, given for another wording"
    return why


def answers_current(seeds: pd.DataFrame) -> pd.DataFrame:
    """The seed tasks whose reference answer was given for their own wording (`answer_stale` None), without
    that column: what annotation may turn into tasks."""
    return seeds[seeds["answer_stale"].isna()].drop(columns="answer_stale")


def held_back_by_source(seeds: pd.DataFrame) -> dict[str, int]:
    """Seed tasks held back because their reference answer predates their text (`answer_stale` set), per
    source (sources without any left out)."""
    held = seeds.loc[seeds["answer_stale"].notna(), "source"].value_counts().sort_index()
    return {str(source): int(count) for source, count in held.items()}


def flagged_stale(seeds: pd.DataFrame, as_of: dt.date) -> pd.DataFrame:
    """The seed tasks with stale_phrase (None when not stale) and stale_as_of set as of `as_of`."""
    checked = dt.datetime.combine(as_of, dt.time(), dt.UTC)
    return seeds.assign(stale_phrase=[stale_phrase(text, as_of) for text in seeds["text"]],
                        stale_as_of=pd.Series([checked] * len(seeds), index=seeds.index, dtype="datetime64[us, UTC]"))


def seeds_to_annotate(seeds: pd.DataFrame, handle: str) -> pd.DataFrame:
    """The flagged seed tasks (`flagged_stale`) annotation takes: all of them, but the stale ones left out
    under handle `drop`."""
    return seeds[seeds["stale_phrase"].isna()] if handle == "drop" else seeds


def any_to_rewrite(seeds: pd.DataFrame, handle: str) -> bool:
    """Whether handle `rewrite` has a stale seed task to rewrite (then the stale purpose's LLM is needed)."""
    return handle == "rewrite" and bool(seeds["stale_phrase"].notna().any())


def stale_counts(seeds: pd.DataFrame) -> dict[str, int]:
    """Flagged seed tasks per source (sources without any left out)."""
    return {str(k): int(v) for k, v in seeds.loc[seeds["stale_phrase"].notna(), "source"].value_counts()
            .sort_index().items()}


def stale_summary(seeds: pd.DataFrame, handle: str) -> dict[str, dict[str, int]]:
    """Per source, the flagged seed tasks, and for handle `drop` how many are dropped (all of them)."""
    return {source: {"flagged": n, **({"dropped": n} if handle == "drop" else {})}
            for source, n in stale_counts(seeds).items()}


class RefreshedTask(BaseModel):
    """The LLM's answer for one stale task."""

    task: str = Field(min_length=10, description="The task with every past date moved to the future, nothing else "
                                                 "changed.")


@dataclass
class Refreshed:
    """What `refreshed_seeds` made of a batch: the seeds (stale ones rewritten), and the stale ones it could not."""

    rows: pd.DataFrame
    bad: list[BadTask] = field(default_factory=list)
    by_source: dict[str, int] = field(default_factory=dict)
    """Rewritten seed tasks per source."""


def refreshed_seeds(seeds: pd.DataFrame, llm: LLM, config: StaleConfig, as_of: dt.date) -> Refreshed:
    """The seeds (flagged by `flagged_stale`) with each stale one's text rewritten by the LLM to a future
    date (one structured call each, purpose config.purpose, cached and ledgered) and the source's text
    in original_text; an answer that is still stale as of `as_of`, or unchanged, is asked again. A stale
    seed whose call failed, or whose answer stayed invalid, is a bad record instead (retried next build)."""
    stale = seeds[seeds["stale_phrase"].notna()]

    async def ask_all() -> list[RefreshedTask | BadTask]:
        return await asyncio.gather(*(_refresh(llm, seed, config, as_of) for seed in stale.to_dict("records")))

    answers = dict(zip(stale.index, asyncio.run(ask_all()) if len(stale) else [], strict=True))
    bad = [answer for answer in answers.values() if isinstance(answer, BadTask)]
    rows = seeds.drop(index=[i for i, answer in answers.items() if isinstance(answer, BadTask)]).assign(
        original_text=None)
    for i, answer in answers.items():
        if isinstance(answer, RefreshedTask):
            rows.loc[i, ["original_text", "text"]] = [rows.loc[i, "text"], answer.task]
    rewritten = rows.loc[rows["original_text"].notna(), "source"].value_counts()
    return Refreshed(rows, bad, {str(k): int(v) for k, v in rewritten.items()})


def _answer_schema(text: str, as_of: dt.date) -> type[RefreshedTask]:
    """RefreshedTask that also refuses an answer still stale as of `as_of`, or unchanged from `text`."""

    class Checked(RefreshedTask):
        @model_validator(mode="after")
        def _in_the_future(self) -> Checked:
            left = stale_phrase(self.task, as_of)
            if left:
                raise ValueError(f"{left!r} is still before {as_of.isoformat()}: move every past date to the future")
            if " ".join(self.task.split()) == " ".join(text.split()):
                raise ValueError("the task is unchanged: move its past dates to the future")
            return self

    Checked.__name__ = RefreshedTask.__name__
    return Checked


async def _refresh(llm: LLM, seed: dict[str, Any], config: StaleConfig, as_of: dt.date) -> RefreshedTask | BadTask:
    prompt = load_prompt("refresh_task")
    messages = prompt.render(task=seed["text"], phrase=seed["stale_phrase"], as_of=as_of.isoformat())
    try:
        answer = await llm.structured(config.purpose, messages, _answer_schema(seed["text"], as_of), prompt=prompt,
                                      temperature=0, max_tokens=config.max_tokens)
    except LLMCallError as error:
        return BadTask(seed["source"], seed["source_id"], f"stale date not rewritten: {error}")
    if isinstance(answer, RefreshedTask):
        return answer
    return BadTask(seed["source"], seed["source_id"], f"stale date not rewritten: {answer}")
