"""Site specs: a website as a finite state machine, written as data (YAML or JSON).

A spec file (webgym/sites/specs/<name>.yaml) holds:

    name, hostname, title, tagline, domain, subdomain, graph, family, seed, theme   identity and look
    data:    {TABLE: [rows, each with an "id"]}      what fills the pages (products, flights, ...)
    state:   {VAR: {type, description, default, ...}} typed variables: text, enum, int, bool, set,
                                                      list (of records)
    views:   {VIEW: {from, where, sort, page}}        derived row sets, e.g. filtered search results
    pages:   {PAGE: {title, path, main, side}}        each page's blocks (lists, records, controls...)
    nav:     [ACTION]                                 actions linked from the site header
    actions: {ACTION: {pages, element, params, pre, effects, to}}
             the FSM's edges: where the action is offered, the UI element that triggers it (link,
             button, select, checkbox, pagination, text_input, form), its parameters, precondition,
             effect on the state and the page it leads to
    goals:   [{id, text, groups: [{description, facts: [CONDITION]}]}]
             goal predicates as fact groups: each fact is an exact condition on the final state (or
             on the agent's answer, for question goals, whose `evidence` says where the answer is seen);
             a goal with `vary` is a template, made once per combination of values (goals.py)

`extends: GRAPH` starts from specs/graphs/GRAPH.yaml and deep-merges the site's own keys over it, so
two sites can share one FSM graph with their own data, theme and goals. Expressions, conditions and
effects are described in webgym/sites/expr.py and webgym/sites/machine.py. A spec that does not
hold together (an unknown variable, an action that no element triggers, an unreachable goal...) is
rejected with a `SpecError` naming the file and the exact location.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from webgym.sites.expr import SpecError

SPECS_DIR = Path(__file__).resolve().parent / "specs"
GRAPHS_DIR = SPECS_DIR / "graphs"

VarType = Literal["text", "enum", "int", "bool", "set", "list"]
ElementKind = Literal["link", "button", "select", "checkbox", "pagination", "text_input", "form"]
BlockType = Literal["heading", "text", "notice", "list", "record", "items", "controls", "stats"]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Overlay(Model):
    """A set variable that shows on a data table's rows: `field` is true on the rows whose id is in
    the set (e.g. the starred emails), so views can filter and pages can show it."""

    table: str = Field(description="Data table whose rows get the field.")
    field: str = Field(description="Field set on every row: whether the row's id is in the set.")


class VarSpec(Model):
    type: VarType = Field(description="text, enum, int, bool, set or list (of records).")
    description: str = Field(description="What it holds, in words ('the search text'); used in rubric facts.")
    default: Any = Field(default=None, description="Initial value; null, 0, false or empty when omitted.")
    values: list[Any] | None = Field(default=None, description="Domain of an enum or of a set's members.")
    values_from: str | None = Field(default=None, description="Domain from data: 'TABLE.FIELD'.")
    labels: str | None = Field(default=None, description="Data table whose rows' `name` label the values.")
    min: int | None = Field(default=None, description="Smallest int value.")
    max: int | None = Field(default=None, description="Largest int value.")
    fields: list[str] | None = Field(default=None, description="Fields of a list's records.")
    key: str | None = Field(default=None, description="Record field that identifies a list item: appending "
                                                      "an item with the same key replaces it.")
    max_items: int | None = Field(default=None, ge=1, description="Most items a list or set may hold.")
    overlay: Overlay | None = Field(default=None, description="Show a set's membership as a field of a table's rows.")


class Filter(Model):
    """One row filter of a view; skipped while its value is empty (null, '', []) or equals `ignore`."""

    field: str | list[str] = Field(description="Row field(s); with several, any may match.")
    op: str = Field(description="Condition operator applied as (row field, value).")
    value: Any = Field(description="Expression, usually {var: ...}.")
    ignore: Any = Field(default=None, description="A value that means 'no filter' (e.g. 'all').")


class SortSpec(Model):
    by: Any = Field(description="Expression naming the sort option, usually {var: sort}.")
    options: dict[str, list[str]] = Field(description="Option -> row fields; '-field' sorts descending.")


class PageBy(Model):
    var: str = Field(description="Int variable holding the page number (from 1).")
    size: int = Field(ge=1, description="Rows per page.")


class ViewSpec(Model):
    source: str = Field(alias="from", description="Data table, or a list variable, the rows come from.")
    where: list[Filter] = Field(default_factory=list, description="Row filters, all must hold.")
    sort: SortSpec | None = Field(default=None, description="Sort order.")
    page: PageBy | None = Field(default=None, description="Pagination.")


class ParamSpec(Model):
    values: list[Any] | None = Field(default=None, description="Candidate values (what search tries).")
    source: Any = Field(default=None, alias="from",
                        description="Candidates computed from the state, e.g. {view: results, field: id}.")
    free: bool = Field(default=False, description="The site accepts any typed text, not just the candidates.")
    label: str | None = Field(default=None, description="Field label in forms.")
    field: Literal["text", "choice", "checkbox"] = Field(default="text", description="Form widget.")
    placeholder: str | None = Field(default=None, description="Placeholder text of a text field.")
    labels: str | None = Field(default=None, description="Data table whose `name` labels the values.")
    bind: str | None = Field(default=None, description="Variable whose value prefills the form field.")


class ElementSpec(Model):
    kind: ElementKind = Field(description="link, button, select, checkbox, pagination, text_input or form.")
    label: str | None = Field(default=None, description="Visible text; {field} and {#var} are filled in.")
    style: str | None = Field(default=None, description="Visual variant: primary, secondary, danger, chips, "
                                                       "tabs, links, icon.")
    bind: str | None = Field(default=None, description="Variable whose value the element shows as chosen.")
    submit: str | None = Field(default=None, description="Submit button text of a form or text input.")


class ActionSpec(Model):
    pages: list[str] | Literal["*"] = Field(description="Pages that offer the action ('*': every page).")
    element: ElementSpec = Field(description="The UI element that triggers it.")
    description: str | None = Field(default=None, description="What it does, in words.")
    params: dict[str, ParamSpec] = Field(default_factory=dict, description="Parameters and their domains.")
    pre: list[dict[str, Any]] = Field(default_factory=list, description="Precondition: conditions that must all hold.")
    effects: list[dict[str, Any]] = Field(default_factory=list, description="Effects on the state, in order.")
    to: str | None = Field(default=None, description="Page it leads to (stays on the page when omitted).")


class FieldSpec(Model):
    field: str = Field(description="Row field.")
    label: str | None = Field(default=None, description="Shown before the value.")
    format: Literal["text", "money", "stars", "minutes", "badge", "bool", "count"] = Field(default="text")


class BlockSpec(Model):
    type: BlockType = Field(description="heading, text, notice, list, record, items, controls or stats.")
    text: str | None = Field(default=None, description="heading/text/notice text; {var} and {#var} are filled in.")
    title: str | None = Field(default=None, description="Block title, or a row title template for lists.")
    subtitle: str | None = Field(default=None, description="Row subtitle template.")
    body: str | None = Field(default=None, description="Row or record body template.")
    view: str | None = Field(default=None, description="list: the view whose current page is shown.")
    table: str | None = Field(default=None, description="record/items: data table rows come from.")
    id: Any = Field(default=None, description="record: expression giving the row id.")
    var: str | None = Field(default=None, description="items: the list or set variable shown.")
    fields: list[FieldSpec | str] = Field(default_factory=list, description="Row fields shown.")
    actions: list[str] = Field(default_factory=list, description="Actions rendered in the block.")
    layout: Literal["grid", "rows", "table", "inline", "stack"] = Field(default="rows")
    image: bool = Field(default=False, description="Show a picture tile per row.")
    empty: str | None = Field(default=None, description="Text shown when there is nothing to list.")
    when: list[dict[str, Any]] = Field(default_factory=list, description="Show only while these conditions hold.")
    stats: list[dict[str, Any]] = Field(default_factory=list, description="stats: [{label, value: EXPR, format}].")


class PageSpec(Model):
    title: str = Field(description="Page title (browser tab and heading); templates allowed.")
    path: str = Field(description="URL path, e.g. /search.")
    main: list[BlockSpec] = Field(default_factory=list, description="Blocks of the main column.")
    side: list[BlockSpec] = Field(default_factory=list, description="Blocks of the sidebar.")


class ThemeSpec(Model):
    """Look of a site; of the first eight, anything left out is drawn from the site's seed. nav, width and
    surface came later: left out, they keep the look sites had before them (links in the header, a
    1180 px page, bordered panels), so no older site changes."""

    palette: str | None = Field(default=None, description="Named palette (see render.PALETTES).")
    font: str | None = Field(default=None, description="Font family for text.")
    heading_font: str | None = Field(default=None, description="Font family for headings.")
    layout: Literal["sidebar-left", "sidebar-right", "top"] | None = Field(default=None)
    header: Literal["solid", "light", "split"] | None = Field(default=None)
    radius: int | None = Field(default=None, ge=0, le=24)
    density: Literal["compact", "cozy", "roomy"] | None = Field(default=None)
    logo: str | None = Field(default=None, description="Short mark drawn in the logo.")
    nav: Literal["header", "bar", "rail"] | None = Field(
        default=None, description="Where the site's navigation sits: in the header, in a bar under it, or in a "
                                  "column at the left of the page.")
    width: Literal["narrow", "normal", "wide"] | None = Field(default=None, description="Width of the page.")
    surface: Literal["bordered", "shadow", "flat"] | None = Field(
        default=None, description="How panels and cards stand out: a border, a shadow, or a tint.")


class GroupSpec(Model):
    description: str = Field(description="What the group checks.")
    facts: list[dict[str, Any]] = Field(min_length=1, description="Conditions; 'fact' overrides the text.")


class GoalSpec(Model):
    id: str = Field(description="Unique within the site.")
    text: str = Field(description="Task text shown to the agent; {title} and {hostname} are filled in.")
    groups: list[GroupSpec] = Field(min_length=1, description="Fact groups of the goal predicate; a question "
                                                              "goal's answer fact carries `evidence`, the "
                                                              "conditions under which the answer is on screen.")
    origin: str | None = Field(default=None, description="Set on goals made from a template (goals.py): the "
                                                         "template's place and the values, for error messages.")


class GoalQuery(Model):
    """Rows of a data table that a goal template is instantiated over, filtered and ordered like a view."""

    source: str = Field(alias="from", description="Data table.")
    where: list[Filter] = Field(default_factory=list, description="Row filters, all must hold; a value may "
                                                                  "name bindings made before this one.")
    sort: list[str] = Field(default_factory=list, description="Row fields, the first one first; '-field' "
                                                             "sorts descending; may name earlier bindings.")
    offset: int = Field(default=0, ge=0, description="Rows skipped after sorting (4: the first of page 2).")
    limit: int | None = Field(default=None, ge=1, description="Most rows kept (1: the best match only).")


class GoalTemplate(Model):
    """A goal written once and made once per combination of values (see goals.py)."""

    id: str = Field(description="Id pattern; the bindings it names make each goal's id unique.")
    vary: dict[str, list[Any] | GoalQuery] = Field(
        min_length=1, description="Name -> literal values, or a query over a data table; every combination "
                                  "makes one goal.")
    text: str = Field(description="Task text pattern.")
    groups: list[dict[str, Any]] = Field(min_length=1, description="Fact groups, as in a goal, with placeholders.")


class SiteSpec(Model):
    """A whole site. `source` is the file it came from (for error messages)."""

    name: str = Field(description="Short name, e.g. shop-a.")
    hostname: str = Field(description="Host name under .test, e.g. shop-a.test.")
    title: str = Field(description="The site's brand name.")
    tagline: str | None = Field(default=None, description="A line under the brand.")
    domain: str = Field(description="Task domain: shopping, travel, email, social, information, account.")
    subdomain: str | None = Field(default=None, description="Finer topic, e.g. 'homeware'.")
    graph: str = Field(description="Name of the FSM graph (sites that share one have the same graph).")
    family: str | None = Field(default=None, description="Family of the site (family.py): set by the generator on "
                                                         "the sites it makes; a hand-written site's is its graph.")
    seed: int = Field(default=0, description="Seed of the theme draws.")
    theme: ThemeSpec = Field(default_factory=ThemeSpec)
    start_page: str = Field(description="Page of the initial state.")
    data: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    state: dict[str, VarSpec] = Field(default_factory=dict)
    views: dict[str, ViewSpec] = Field(default_factory=dict)
    pages: dict[str, PageSpec]
    nav: list[str] = Field(default_factory=list)
    actions: dict[str, ActionSpec]
    goals: list[GoalSpec] = Field(default_factory=list)
    source: str | None = Field(default=None, exclude=True, description="File the spec was read from.")

    @model_validator(mode="after")
    def _family_of_graph(self) -> SiteSpec:
        if self.family is None:
            self.family = self.graph
        return self

    def where(self) -> str:
        return self.source or f"site {self.name}"


def format_loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"



def validated_spec(raw: dict[str, Any], source: str) -> SiteSpec:
    """A SiteSpec from a complete spec mapping (graph merged, goal templates expanded); every structural
    error is named by file and location."""
    try:
        spec = SiteSpec.model_validate(raw)
    except ValidationError as error:
        problems = [f"{source}: {format_loc(e['loc'])}: {e['msg']}" for e in error.errors()]
        raise SpecError("\n".join(problems)) from None
    spec.source = source
    return spec
