"""HTML of a site's pages: a session's state rendered through its spec, themed per site.

Python builds a small view model of the page (blocks, rows, elements) and the Jinja template
templates/page.html turns it into markup; templates/site.css and site.js are the same for every
site, the theme only sets CSS variables and layout classes (templates/looks.css adds the navigation
placements, page widths and surfaces that came later, only to the sites that use them, so older
sites render byte for byte as before). Every element that triggers an FSM action carries
`data-wg-action` and `data-wg-params` (see oracle.py), and a disabled element is one whose action's
precondition does not hold now. Rendering is deterministic: the same spec,
seed and state give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import jinja2

from webgym.sites.expr import Record, thaw
from webgym.sites.machine import Machine, State
from webgym.sites.spec import BlockSpec, FieldSpec, SiteSpec

TEMPLATES = Path(__file__).resolve().parent / "templates"

PALETTES: dict[str, dict[str, str]] = {
    "ocean": {"primary": "#0b5cad", "accent": "#ff8a00", "bg": "#f3f6fa", "surface": "#ffffff", "text": "#1c2733",
              "muted": "#5d6b7a", "line": "#dbe3ec", "on_primary": "#ffffff"},
    "forest": {"primary": "#1f6f43", "accent": "#d99a00", "bg": "#f4f6f1", "surface": "#ffffff", "text": "#1d2a21",
               "muted": "#5b6b60", "line": "#d8e0d4", "on_primary": "#ffffff"},
    "sunset": {"primary": "#c2410c", "accent": "#0e7490", "bg": "#fff8f2", "surface": "#ffffff", "text": "#2b1d14",
               "muted": "#7a5f50", "line": "#f0dccd", "on_primary": "#ffffff"},
    "plum": {"primary": "#6d28d9", "accent": "#db2777", "bg": "#f7f5fc", "surface": "#ffffff", "text": "#221a33",
             "muted": "#6b6280", "line": "#e2dcef", "on_primary": "#ffffff"},
    "slate": {"primary": "#334155", "accent": "#0ea5e9", "bg": "#f1f5f9", "surface": "#ffffff", "text": "#0f172a",
              "muted": "#64748b", "line": "#dbe2ea", "on_primary": "#ffffff"},
    "cherry": {"primary": "#b91c1c", "accent": "#1d4ed8", "bg": "#fbf6f6", "surface": "#ffffff", "text": "#2a1414",
               "muted": "#7b5b5b", "line": "#efdada", "on_primary": "#ffffff"},
    "teal": {"primary": "#0f766e", "accent": "#f59e0b", "bg": "#effaf8", "surface": "#ffffff", "text": "#12312e",
             "muted": "#557370", "line": "#d3ebe7", "on_primary": "#ffffff"},
    "midnight": {"primary": "#60a5fa", "accent": "#fbbf24", "bg": "#0f172a", "surface": "#1e293b", "text": "#e2e8f0",
                 "muted": "#94a3b8", "line": "#334155", "on_primary": "#0f172a"},
    "sand": {"primary": "#92400e", "accent": "#15803d", "bg": "#fbf8f1", "surface": "#fffdf8", "text": "#2d2216",
             "muted": "#7c6a55", "line": "#eadfca", "on_primary": "#ffffff"},
    "ink": {"primary": "#111827", "accent": "#2563eb", "bg": "#fafafa", "surface": "#ffffff", "text": "#111827",
            "muted": "#6b7280", "line": "#e5e7eb", "on_primary": "#ffffff"},
    "rose": {"primary": "#be185d", "accent": "#0891b2", "bg": "#fff5f8", "surface": "#ffffff", "text": "#2e1520",
             "muted": "#80606d", "line": "#f3d9e3", "on_primary": "#ffffff"},
    "graphite": {"primary": "#a3e635", "accent": "#f472b6", "bg": "#18181b", "surface": "#27272a", "text": "#f4f4f5",
                 "muted": "#a1a1aa", "line": "#3f3f46", "on_primary": "#18181b"},
}
PALETTES.update({
    "mint": {"primary": "#047857", "accent": "#7c3aed", "bg": "#f0fdf7", "surface": "#ffffff", "text": "#0b2a1f",
             "muted": "#4f6f63", "line": "#cdeee0", "on_primary": "#ffffff"},
    "coral": {"primary": "#e5484d", "accent": "#0f766e", "bg": "#fff7f5", "surface": "#ffffff", "text": "#2b1615",
              "muted": "#83605c", "line": "#f6d9d4", "on_primary": "#ffffff"},
    "indigo": {"primary": "#4338ca", "accent": "#f97316", "bg": "#f5f6ff", "surface": "#ffffff", "text": "#1b1a3a",
               "muted": "#5f5f85", "line": "#dcdcf5", "on_primary": "#ffffff"},
    "olive": {"primary": "#4d5b16", "accent": "#b45309", "bg": "#f8f8ef", "surface": "#fffffa", "text": "#23270f",
              "muted": "#6a6d4f", "line": "#e4e4cf", "on_primary": "#ffffff"},
    "ocean-night": {"primary": "#38bdf8", "accent": "#f472b6", "bg": "#0b1220", "surface": "#111a2e",
                    "text": "#e6edf7", "muted": "#8ea0bd", "line": "#22304d", "on_primary": "#06121f"},
    "amber": {"primary": "#b45309", "accent": "#1d4ed8", "bg": "#fffbeb", "surface": "#ffffff", "text": "#2a1d05",
              "muted": "#7a6440", "line": "#f3e3bd", "on_primary": "#ffffff"},
})
DRAWN_PALETTES = ["cherry", "forest", "graphite", "ink", "midnight", "ocean", "plum", "rose", "sand", "slate",
                  "sunset", "teal"]
"""The palettes `theme_for` draws from for a site that names none: the first twelve, so that adding a
palette never changes the look of an existing site."""
FONTS = ["Liberation Sans", "DejaVu Sans", "Liberation Serif", "DejaVu Serif", "Liberation Sans Narrow",
         "DejaVu Sans Condensed"]
LAYOUTS = ["sidebar-left", "sidebar-right", "top"]
HEADERS = ["solid", "light", "split"]
DENSITIES = ["compact", "cozy", "roomy"]
RADII = [0, 4, 8, 12, 18]
THEME_CHOICES: dict[str, list] = {
    "palette": sorted(PALETTES), "font": [*FONTS, "DejaVu Sans Mono", "Liberation Mono"],
    "heading_font": [*FONTS, "DejaVu Serif Condensed", "DejaVu Sans Mono"], "layout": LAYOUTS,
    "header": HEADERS, "nav": ["header", "bar", "rail"], "width": ["narrow", "normal", "wide"],
    "surface": ["bordered", "shadow", "flat"], "radius": RADII, "density": DENSITIES}
"""Every look a generated site may draw (generate.py), one choice per key."""
TOKEN = re.compile(r"\{(#?)([\w.]+)\}")


@dataclass(frozen=True)
class Theme:
    palette: str
    colors: dict[str, str]
    font: str
    heading_font: str
    layout: str
    header: str
    radius: int
    density: str
    logo: str
    nav: str | None
    width: str | None
    surface: str | None


def theme_for(spec: SiteSpec) -> Theme:
    """The site's theme: what the spec fixes, the rest drawn from a generator seeded by name and seed."""
    rng = random.Random(f"{spec.name}:{spec.seed}")
    drawn = {"palette": rng.choice(DRAWN_PALETTES), "font": rng.choice(FONTS), "heading_font": rng.choice(FONTS),
             "layout": rng.choice(LAYOUTS), "header": rng.choice(HEADERS), "radius": rng.choice(RADII),
             "density": rng.choice(DENSITIES)}
    chosen = {k: v for k, v in spec.theme.model_dump().items() if v is not None}
    picked = {**drawn, **chosen}
    if picked["palette"] not in PALETTES:
        raise ValueError(f"{spec.where()}: theme.palette: unknown palette {picked['palette']!r} "
                         f"(palettes: {', '.join(sorted(PALETTES))})")
    logo = picked.get("logo") or "".join(w[0] for w in spec.title.split()[:2]).upper()
    return Theme(picked["palette"], PALETTES[picked["palette"]], picked["font"], picked["heading_font"],
                 picked["layout"], picked["header"], picked["radius"], picked["density"], logo,
                 picked.get("nav"), picked.get("width"), picked.get("surface"))


def _hue(key: str) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest()[:4], 16) % 360


def format_value(value: Any, fmt: str = "text") -> str:
    if value is None or value == "":
        return "—"
    if fmt == "money":
        return f"${float(value):,.2f}"
    if fmt == "stars":
        return f"★ {float(value):.1f}"
    if fmt == "minutes":
        minutes = int(value)
        return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"
    if fmt == "bool":
        return "Yes" if value else "No"
    if fmt == "count":
        return str(len(value)) if isinstance(value, (list, tuple)) else str(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


class Renderer:
    """Renders one site's pages for any state of its machine."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.spec = machine.spec
        self.theme = theme_for(self.spec)
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                 trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
        self.template = env.get_template("page.html")
        self.css = (TEMPLATES / "site.css").read_text(encoding="utf-8")
        self.js = (TEMPLATES / "site.js").read_text(encoding="utf-8")
        later_looks = self.theme.nav or self.theme.width or self.theme.surface
        self.looks_css = (TEMPLATES / "looks.css").read_text(encoding="utf-8") if later_looks else ""
        self._compiled: dict[tuple[int, str], Any] = {}

    def _once(self, block: BlockSpec, part: str, build: Callable[[], Any]) -> Any:
        """A block's compiled conditions or expressions, compiled on first use."""
        key = (id(block), part)
        if key not in self._compiled:
            self._compiled[key] = build()
        return self._compiled[key]

    # ---- text ------------------------------------------------------------------------------

    def fill(self, template: str | None, state: State, row: dict[str, Any] | None = None) -> str:
        """Fill {name} (a row field, else a state variable, labelled) and {#name} (a count)."""
        if not template:
            return ""
        machine = self.machine

        def token(match: re.Match) -> str:
            count, name = match.groups()
            if row is not None and name in row:
                value = row[name]
                return str(len(value)) if count else format_value(value)
            if name in machine.vars:
                value = state.values[machine.vars[name].index]
                if count:
                    return str(len(value or ()))
                if isinstance(value, tuple):
                    return ", ".join(machine.label(name, v) for v in value)
                return machine.label(name, value)
            if name in machine.views:
                return str(machine.view(state, name).total)
            return match.group(0)
        return TOKEN.sub(token, template)

    def _value_label(self, param_labels: str | None, bind: str | None, value: Any) -> str:
        if param_labels:
            return self.machine.label(param_labels, value)
        if bind:
            return self.machine.label(bind, value)
        return format_value(thaw(value))

    # ---- elements --------------------------------------------------------------------------

    def element(self, state: State, action_id: str, bound: dict[str, Any], row: dict[str, Any] | None = None,
                label: str | None = None) -> dict[str, Any]:
        """View model of the element(s) of one action; `bound` are parameters fixed by the context."""
        machine = self.machine
        spec = self.spec.actions[action_id]
        action = machine.actions[action_id]
        element = spec.element
        free = [p for p in action.params if p.name not in bound]
        title = self.fill(element.label, state, row)
        base = {"action": action_id, "kind": element.kind, "style": element.style or "", "title": title,
                "label": label or title or spec.description or action_id.replace("_", " "),
                "href": self.spec.pages[action.to or state.page].path, "submit": element.submit}
        if element.kind in ("form", "text_input"):
            fields = []
            for param in free:
                pspec = spec.params[param.name]
                current = state.values[machine.vars[pspec.bind].index] if pspec.bind else None
                field = {"name": param.name, "widget": pspec.field, "label": pspec.label or param.name.replace("_", " "),
                         "placeholder": pspec.placeholder or "", "value": "" if current is None else format_value(thaw(current))}
                if pspec.field == "choice":
                    field["options"] = [{"value": format_value(thaw(v)), "label": self._value_label(pspec.labels, pspec.bind, v),
                                         "checked": current is not None and v == current}
                                        for v in machine.candidates(state, action)[param.name]]
                elif pspec.field == "checkbox":
                    field["checked"] = bool(current)
                fields.append(field)
            return {**base, "params": _params(bound), "fields": fields, "enabled": machine.available(state, action_id)}
        if not free:
            return {**base, "params": _params(bound), "enabled": machine.enabled(state, action_id, bound),
                    "checked": bool(state.values[machine.vars[element.bind].index]) if element.bind else False}
        param = free[0]
        pspec = spec.params[param.name]
        current = state.values[machine.vars[element.bind].index] if element.bind else None
        options = []
        for value in machine.candidates(state, action)[param.name]:
            params = {**bound, param.name: value}
            chosen = value in current if isinstance(current, tuple) else value == current
            options.append({"params": _params(params), "enabled": machine.enabled(state, action_id, params),
                            "label": self._value_label(pspec.labels, element.bind, value), "checked": chosen})
        return {**base, "options": options, "enabled": any(o["enabled"] for o in options)}

    # ---- blocks ----------------------------------------------------------------------------

    def _fields(self, block: BlockSpec, row: dict[str, Any]) -> list[dict[str, str]]:
        out = []
        for item in block.fields:
            field = FieldSpec(field=item) if isinstance(item, str) else item
            out.append({"label": field.label or "", "value": format_value(row.get(field.field), field.format),
                        "format": field.format, "name": field.field})
        return out

    def _row(self, state: State, block: BlockSpec, row: dict[str, Any], row_id: Any) -> dict[str, Any]:
        title = self.fill(block.title or "{name}", state, row)
        actions, link = [], None
        for action_id in block.actions:
            param = self.machine.actions[action_id].params[0].name
            if link is None and self.spec.actions[action_id].element.kind == "link" and not self.spec.actions[action_id].element.label:
                link = self.element(state, action_id, {param: row_id}, row, label=title)
            else:
                actions.append(self.element(state, action_id, {param: row_id}, row))
        return {"id": str(row_id), "title": title, "link": link, "subtitle": self.fill(block.subtitle, state, row),
                "body": self.fill(block.body, state, row), "fields": self._fields(block, row), "actions": actions,
                "image": {"initials": "".join(w[0] for w in title.split()[:2]).upper(), "hue": _hue(str(row_id))}
                if block.image else None, "unread": bool(row.get("unread"))}

    def block(self, state: State, block: BlockSpec) -> dict[str, Any] | None:
        machine = self.machine
        env = machine.env(state)
        when = self._once(block, "when", lambda: machine.compiler.conditions(block.when, "when"))
        if not all(c.fn(env) for c in when):
            return None
        out: dict[str, Any] = {"type": block.type, "title": self.fill(block.title, state), "layout": block.layout,
                               "text": self.fill(block.text, state), "empty": block.empty or "Nothing here yet.",
                               "rows": [], "summary": "", "columns": [], "record": None, "elements": [], "stats": []}
        if block.type == "list":
            result = machine.view(state, block.view)
            out["title"] = ""  # a list's title is the template of its rows' titles
            out["rows"] = [self._row(state, block, row, row["id"]) for row in result.rows]
            out["summary"] = (f"{result.total} result{'s' if result.total != 1 else ''}"
                              + (f" · page {result.page} of {result.pages}" if result.pages > 1 else ""))
            out["columns"] = [f["label"] for f in out["rows"][0]["fields"]] if out["rows"] else []
        elif block.type == "record":
            row_id = self._once(block, "id", lambda: machine.compiler.expr(block.id, "id")).fn(env)
            row = machine.tables[block.table].get(row_id)
            out["record"] = None if row is None else {
                "title": self.fill(block.title or "{name}", state, row), "subtitle": self.fill(block.subtitle, state, row),
                "body": self.fill(block.body, state, row), "fields": self._fields(block, row),
                "image": {"initials": "".join(w[0] for w in str(row.get("name", "?")).split()[:2]).upper(),
                          "hue": _hue(str(row_id))} if block.image else None}
            out["elements"] = [self.element(state, a, {}) for a in block.actions]
        elif block.type == "items":
            var = machine.vars[block.var]
            rows = []
            for item in state.values[var.index]:
                data = thaw(item) if isinstance(item, Record) else {"id": item}
                joined = {**machine.tables.get(block.table or "", {}).get(data.get("id"), {}), **data}
                rows.append(self._row(state, block, joined, data.get("id")))
            out["rows"] = rows
            out["columns"] = [f["label"] for f in rows[0]["fields"]] if rows else []
        elif block.type == "controls":
            # An element named like its block (a "Brand" filter under "Brand") does not repeat the name.
            out["elements"] = [{**e, "show_label": e["label"].casefold() != out["title"].casefold()}
                               for e in (self.element(state, a, {}) for a in block.actions)]
        elif block.type == "stats":
            values = self._once(block, "stats", lambda: [machine.compiler.expr(s.get("value"), "stat") for s in block.stats])
            out["stats"] = [{"label": s.get("label", ""), "value": format_value(thaw(v.fn(env)), s.get("format", "text"))}
                            for s, v in zip(block.stats, values)]
        return out

    # ---- page ------------------------------------------------------------------------------

    def render(self, state: State, message: str | None = None) -> str:
        page = self.spec.pages[state.page]
        nav = [self.element(state, a, {}) for a in self.spec.nav if state.page in self.machine.actions[a].pages]
        blocks = {column: [b for b in (self.block(state, spec) for spec in getattr(page, column)) if b]
                  for column in ("main", "side")}
        return self.template.render(
            site=self.spec, theme=asdict(self.theme), title=self.fill(page.title, state), page_id=state.page,
            nav=nav, main=blocks["main"], side=blocks["side"], css=self.css, looks_css=self.looks_css, js=self.js,
            message=message)


def _params(params: dict[str, Any]) -> str:
    return json.dumps({k: thaw(v) for k, v in sorted(params.items())}, separators=(",", ":"), ensure_ascii=False)
