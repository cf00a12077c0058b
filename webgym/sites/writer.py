"""Site families written by an LLM and kept only when their sites pass the checks (AutoWebWorld's
propose - validate - improve loop).

`write_family(llm, "a library catalogue with holds and renewals")` asks the `sites` purpose for a
family (prompt site_family_write, with a shipped family as the example), reads the YAML of its
answer, and checks it exactly as the world checks generated sites (world.family_problems): the
family parses, its sites for the given seeds generate and compile, every goal has an oracle path,
and optionally a sample of goals replays in Chromium. The problems go back to the model (prompt
site_family_repair) and it answers again, up to `attempts` answers in all. Only a family that
passes is written, to `<directory>/<family>.yaml`; otherwise `FamilyNotWritten` says what failed
in the last answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from webgym.sites.expr import SpecError
from webgym.sites.family import FAMILIES_DIR, Family, load_families, parse_family
from webgym.sites.world import family_problems

if TYPE_CHECKING:
    from webgym.llm.client import LLM

PURPOSE = "sites"
EXAMPLE_FAMILY = "library"
"""The shipped family the prompt shows, its graph written inline."""
_FENCE = re.compile(r"```(?:ya?ml)?\s*\n(.*?)```", re.DOTALL)


class FamilyNotWritten(RuntimeError):
    """Every answer failed its checks; the message lists the last answer's problems."""


@dataclass
class WrittenFamily:
    """A family that passed, where it was written, and the problems of the answers before it."""

    family: Family
    path: Path
    rejected: list[list[str]] = field(default_factory=list)

    @property
    def answers(self) -> int:
        return len(self.rejected) + 1


def example_family(name: str = EXAMPLE_FAMILY) -> str:
    """A shipped family as one YAML document, its graph inline: what an answer should look like."""
    family = load_families(names=[name])[name]
    raw = family.model_dump(mode="json", exclude={"source"}, exclude_defaults=True)
    raw["graph"] = family.graph_raw()
    return yaml.safe_dump(raw, sort_keys=False, allow_unicode=True, width=120).strip()


def answer_yaml(text: str | None) -> Any:
    """The YAML document of an answer: the first ```yaml fence, else the whole text."""
    text = text or ""
    fenced = _FENCE.search(text)
    try:
        return yaml.safe_load(fenced.group(1) if fenced else text)
    except yaml.YAMLError as error:
        raise SpecError(f"the answer is not valid YAML: {error}") from None


def answer_problems(raw: Any, known: set[str], seeds: list[int], max_states: int,
                    replay_goals: int) -> tuple[Family | None, list[str]]:
    """The family an answer holds and the checks it fails (none: it may be kept)."""
    try:
        family = parse_family(raw, "the answer")
    except SpecError as error:
        return None, str(error).splitlines()
    family.source = None  # its sites' messages then name it "family <name>"
    if family.family in known:
        return family, [f"family: {family.family!r} already exists; choose another name"]
    return family, [str(problem) for problem in family_problems(family, seeds, max_states=max_states,
                                                                 replay_goals=replay_goals)]


def write_family(llm: LLM, description: str, *, directory: str | Path = FAMILIES_DIR, attempts: int = 3,
                 seeds: tuple[int, ...] = (0, 1), max_states: int = 200_000, replay_goals: int = 0) -> WrittenFamily:
    """Ask for a family, check it, feed the problems back, and keep it once it passes (module
    docstring). `seeds` are the sites checked; `replay_goals` goals of each are replayed in Chromium."""
    from webgym.llm.prompts import load_prompt

    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, got {attempts}")
    llm.require(PURPOSE)
    directory = Path(directory)
    known = set(load_families()) | (set(load_families(directory)) if directory.is_dir() else set())
    prompt, repair = load_prompt("site_family_write"), load_prompt("site_family_repair")
    messages = prompt.render(description=description, example=example_family())
    rejected: list[list[str]] = []
    for _ in range(attempts):
        answer = llm.chat_sync(PURPOSE, messages, prompt=prompt).text
        try:
            raw = answer_yaml(answer)
        except SpecError as error:
            family, problems = None, [str(error)]
        else:
            family, problems = answer_problems(raw, known, list(seeds), max_states, replay_goals)
        if family is not None and not problems:
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{family.family}.yaml"
            path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
            family.source = str(path)
            return WrittenFamily(family, path, rejected)
        rejected.append(problems)
        feedback = repair.render(problems="\n".join(f"- {line}" for line in problems))
        messages = [*messages, {"role": "assistant", "content": answer or ""}, *feedback]
    raise FamilyNotWritten(f"no family for {description!r} passed after {attempts} answer(s); the last one "
                           f"failed:\n" + "\n".join(rejected[-1]))
