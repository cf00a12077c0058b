"""Site families: an FSM graph plus the rules that make any number of sites of it (generate.py).

A family file (webgym/sites/families/<family>.yaml) holds:

    family:   short name, also the prefix of its sites' names and host names (shop -> shop-g3.test)
    about:    one line on what the sites are
    graph:    the FSM: a graph under specs/graphs by name, or the graph itself (pages, state, views,
              actions, nav, start_page, in the spec language of spec.py)
    site:     {domain, subdomain, title, tagline}: the identity of each site (rules, see rules.py)
    words:    {NAME: [...]}: word lists of this family only (words/*.yaml are shared by all)
    draw:     {NAME: RULE}: values drawn once per site, in order, that every later rule can name
    data:     {TABLE: {fixed, rows | each, per, fields, unique, sort}}: data tables drawn row by row
    spec:     a spec fragment merged over the graph: starting state, candidate values of typed
              parameters, page titles...; `$` rules in it are evaluated, strings are kept as written
    variants: {PATH: [choice, ...]}: one choice per site, set at a dotted path of the spec
              ("actions.add_to_cart.element.label", "pages.results.main.2.layout"): wording and layout
    goals:    goal templates and goals as in a spec (goals.py); a `text` may be a list of wordings,
              one of which each site uses; a template that finds nothing in a site's data makes
              no goal on that site

Goal templates name data through `vary` queries, so every site gets goals that fit its own data.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from webgym.sites.expr import SpecError
from webgym.sites.spec import GRAPHS_DIR, Model, format_loc
from webgym.sites.specfiles import read_spec_file

FAMILIES_DIR = Path(__file__).resolve().parent / "families"
WORDS_DIR = Path(__file__).resolve().parent / "words"


class TableRecipe(Model):
    """How one data table is drawn: `fixed` rows as written, then a number of rows, or one row (or `per`
    rows) per element of `each`."""

    fixed: list[dict[str, Any]] = Field(default_factory=list, description="Rows written out, first ('all').")
    rows: Any = Field(default=None, description="Rows drawn: N or [LOW, HIGH] (rule); unless `each` is given.")
    each: Any = Field(default=None, description="A word list, or a rule giving a list, whose elements the fields name "
                                                "`item`, or a "
                                                "mapping of names to lists, for every combination of their elements; "
                                                "rows are drawn for each.")
    per: Any = Field(default=1, description="Rows per element of `each`: N or [LOW, HIGH].")
    fields: dict[str, Any] = Field(default_factory=dict, description="Field -> rule, drawn in order (a field another "
                                                                      "one names is drawn first); a field named `_x` "
                                                                      "may be read by other fields and tables but is "
                                                                      "left out of the site's data.")
    unique: list[str] = Field(default_factory=list, description="Fields no two rows may share (a clashing row "
                                                                "is drawn again).")
    sort: list[str] = Field(default_factory=list, description="Order of the rows once drawn ('-field': descending).")


class SiteRecipe(Model):
    domain: str = Field(description="Task domain: a domain of schemas.tasks.TAXONOMY.")
    subdomain: Any = Field(default=None, description="Rule giving a subdomain of that domain.")
    title: Any = Field(description="Rule giving the site's brand name.")
    tagline: Any = Field(default=None, description="Rule giving the line under the brand.")


class Family(Model):
    """A family file (see the module docstring). `source` is the file it came from."""

    family: str = Field(pattern=r"^[a-z][a-z0-9]{1,23}$", description="Short name: lower-case letters and digits.")
    about: str = Field(description="What its sites are, in one line.")
    graph: str | dict[str, Any] = Field(description="A graph under specs/graphs by name, or the graph itself.")
    site: SiteRecipe
    words: dict[str, list[Any]] = Field(default_factory=dict)
    draw: dict[str, Any] = Field(default_factory=dict)
    data: dict[str, TableRecipe] = Field(default_factory=dict)
    spec: dict[str, Any] = Field(default_factory=dict)
    variants: dict[str, list[Any]] = Field(default_factory=dict)
    goals: list[dict[str, Any]] = Field(min_length=1)
    source: str | None = Field(default=None, exclude=True)

    def where(self) -> str:
        return self.source or f"family {self.family}"

    def graph_raw(self) -> dict[str, Any]:
        """The FSM graph as parsed YAML (a fresh copy: generation merges into it)."""
        if isinstance(self.graph, dict):
            return copy.deepcopy(self.graph)
        path = GRAPHS_DIR / f"{self.graph}.yaml"
        if not path.exists():
            known = sorted(p.stem for p in GRAPHS_DIR.glob("*.yaml"))
            raise SpecError(f"{self.where()}: graph: unknown graph {self.graph!r} (graphs: {', '.join(known)})")
        return read_spec_file(path)


def parse_family(raw: Any, source: str) -> Family:
    """A Family from parsed YAML; structural errors name the file and the location."""
    if not isinstance(raw, dict):
        raise SpecError(f"{source}: a family must be a mapping, got {type(raw).__name__}")
    try:
        family = Family.model_validate(raw)
    except ValidationError as error:
        raise SpecError("\n".join(f"{source}: {format_loc(e['loc'])}: {e['msg']}" for e in error.errors())) from None
    family.source = source
    return family


def load_families(directory: str | Path = FAMILIES_DIR, names: list[str] | None = None) -> dict[str, Family]:
    """The family files of a directory (or the named ones), by family name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SpecError(f"{directory}: no such directory of site families")
    families: dict[str, Family] = {}
    for path in sorted(directory.glob("*.yaml")):
        family = parse_family(read_spec_file(path), str(path))
        if family.family in families:
            raise SpecError(f"{path}: family: {family.family!r} is already defined by {families[family.family].source}")
        families[family.family] = family
    if names is not None:
        unknown = sorted(set(names) - set(families))
        if unknown:
            raise SpecError(f"unknown famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
                            f"families in {directory}: {', '.join(sorted(families))}")
        return {name: families[name] for name in names}
    return families


@functools.cache
def shared_words(directory: Path = WORDS_DIR) -> dict[str, list[Any]]:
    """Every shared word list, as FILE.LIST (words/people.yaml's `first` is people.first)."""
    words: dict[str, list[Any]] = {}
    for path in sorted(directory.glob("*.yaml")):
        lists = read_spec_file(path)
        if not isinstance(lists, dict) or not all(isinstance(v, list) for v in lists.values()):
            raise SpecError(f"{path}: a word file maps list names to lists")
        words.update({f"{path.stem}.{name}": items for name, items in lists.items()})
    return words
