"""Figures of the report from declarative specs: a `FigureSpec` names the warehouse query, the panels
(each a kind of plot of `y` against `x`, one series per `group`), the caption and the tables shown under
it; `render_figure` is the one place that turns a spec into HTML, so every figure of webgym/report.py
is drawn, labelled and captioned the same way.
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import duckdb
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

Kind = Literal["rate", "line", "bar", "stacked", "barh", "box"]


@dataclass(frozen=True)
class Panel:
    """One plot of a figure: `y` against `x` of its frame, one series per value of `group`."""

    kind: Kind
    """rate: success_rate with its 95% interval (columns ci_low, ci_high); line; bar; stacked: vertical bars
    of the `stack` columns on top of each other; barh: horizontal bars per `x` stacked by `group`; box: the
    distribution of `y` per `x`."""
    y: str = ""
    x: str = "iteration"
    """`iteration` gets integer ticks at the iterations present (matplotlib would draw 0.5 steps)."""
    group: str | None = None
    query: str | None = None
    """The panel's own query; None: the figure's."""
    title: str = ""
    ylabel: str = ""
    ylim: tuple[float, float | None] | None = None
    stack: dict[str, str] = field(default_factory=dict)
    """stacked: column -> legend label, bottom first."""
    order: list[str] | None = None
    """barh: the categories of `x` in this order (those present)."""
    fill: float | None = None
    """A value for missing `y` (e.g. no cost known: 0)."""
    bar_labels: Callable[[pd.DataFrame], list[str]] | None = None
    """bar: a label above each bar, from the frame."""
    alpha: float | None = None


@dataclass(frozen=True)
class FigureSpec:
    """One report section: its figure of `panels` over `query`, caption and tables; "no data yet: `empty`"
    when the query and every panel's own query return no row."""

    anchor: str
    heading: str
    query: str
    empty: str
    panels: tuple[Panel, ...]
    caption: str
    tables: tuple[tuple[str | None, str], ...]
    """(query, table id) per table under the figure; query None: the figure's frame."""
    size: tuple[float, float] = (6, 3.5)
    grid: tuple[int, int] | None = None
    """Rows and columns of panels; None: one row."""


def _series(frame: pd.DataFrame, group: str | None) -> list[tuple[str | None, pd.DataFrame]]:
    return [(None, frame)] if group is None else [(name, rows) for name, rows in frame.groupby(group)]


def _label(name: object) -> dict[str, str]:
    """A series' legend label; none for the one series of an ungrouped panel."""
    return {} if name is None else {"label": str(name)}


def _rate(ax: Axes, frame: pd.DataFrame, panel: Panel) -> None:
    for name, rows in _series(frame, panel.group):
        errors = [rows.success_rate - rows.ci_low, rows.ci_high - rows.success_rate]
        ax.errorbar(rows[panel.x], rows.success_rate, yerr=errors, marker="o", capsize=3, **_label(name))


def _line(ax: Axes, frame: pd.DataFrame, panel: Panel) -> None:
    for name, rows in _series(frame, panel.group):
        rows = rows.dropna(subset=[panel.y])  # a point without a value (no metric, no wall time) is left out
        ax.plot(rows[panel.x], rows[panel.y], marker="o", **_label(name))


def _bar(ax: Axes, frame: pd.DataFrame, panel: Panel) -> None:
    for name, rows in _series(frame, panel.group):
        bars = ax.bar(rows[panel.x], rows[panel.y], alpha=panel.alpha, **_label(name))
        if panel.bar_labels:
            ax.bar_label(bars, labels=panel.bar_labels(rows), fontsize="small")


def _stacked(ax: Axes, frame: pd.DataFrame, panel: Panel) -> None:
    bottom = pd.Series(0.0, index=frame.index)
    for column, label in panel.stack.items():
        values = frame[column].fillna(0.0).astype(float)
        ax.bar(frame[panel.x], values, bottom=bottom, label=label)
        bottom += values


def _barh(ax: Axes, frame: pd.DataFrame, panel: Panel) -> None:
    table = frame.pivot_table(index=panel.x, columns=panel.group, values=panel.y, aggfunc="sum", fill_value=0)
    if panel.order:
        table = table.reindex([name for name in panel.order if name in table.index])
    left = pd.Series(0.0, index=table.index)
    for column in table.columns:
        ax.barh(table.index, table[column], left=left, label=str(column))
        left += table[column]
    ax.invert_yaxis()
    ax.locator_params(axis="x", nbins=5)


def _box(ax: Axes, frame: pd.DataFrame, panel: Panel) -> None:
    groups = frame.groupby(panel.x)[panel.y]
    ax.boxplot([values.to_numpy() for _, values in groups], positions=list(groups.groups), showmeans=True)
    ax.set_xlabel(panel.x)


DRAW: dict[Kind, Callable[[Axes, pd.DataFrame, Panel], None]] = {
    "rate": _rate, "line": _line, "bar": _bar, "stacked": _stacked, "barh": _barh, "box": _box}


def _draw(ax: Axes, frame: pd.DataFrame, panel: Panel) -> None:
    """The panel's plot, then its labels: title, y label and limits, a legend when it has series, and integer
    iteration ticks (a box plot places its own; an empty panel has none rather than matplotlib's 0 to 1)."""
    if panel.fill is not None:
        frame = frame.fillna({panel.y: panel.fill})
    DRAW[panel.kind](ax, frame, panel)
    if panel.title:
        ax.set_title(panel.title)
    if panel.ylabel:
        ax.set_ylabel(panel.ylabel)
    if panel.ylim:
        ax.set_ylim(*panel.ylim)
    if (panel.group or panel.stack) and not frame.empty:
        ax.legend(fontsize="small")
    if panel.x == "iteration" and panel.kind != "box":
        ax.set_xticks(sorted(frame[panel.x].unique()))
        ax.set_xlabel("iteration")


def embedded(fig: Figure, caption: str) -> str:
    """The figure as an embedded PNG with its caption."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    text = html.escape(caption)
    return (f'<figure><img alt="{text}" src="data:image/png;base64,{data}">'
            f"<figcaption>{text}</figcaption></figure>")


NUMBER_CELL = re.compile(r"<td>(?=[^<]*\d)([-+\d.,:eE ]+)</td>")
"""A cell holding a number or a time, which the page's style never breaks across lines (text cells wrap)."""


def table_html(frame: pd.DataFrame, table_id: str) -> str:
    """The frame as an HTML table in a box that scrolls when too wide; number and time cells are class `num`."""
    table = frame.to_html(index=False, table_id=table_id, border=0, na_rep="",
                          float_format=lambda value: f"{value:.4g}")
    table = NUMBER_CELL.sub(r'<td class="num">\1</td>', table)
    return f'<div class="table">{table}</div>'


def no_data(what: str) -> str:
    return f'<p class="no-data">no data yet: {html.escape(what)}</p>'


def render_figure(spec: FigureSpec, con: duckdb.DuckDBPyConnection) -> str:
    """The section's HTML: the figure of its panels, its caption and its tables, or "no data yet"."""
    frame = con.execute(spec.query).df()
    frames = [frame if panel.query is None else con.execute(panel.query).df() for panel in spec.panels]
    if frame.empty and all(f.empty for f in frames):
        return no_data(spec.empty)
    fig = Figure(figsize=spec.size, layout="constrained")
    axes = fig.subplots(*(spec.grid or (1, len(spec.panels))), squeeze=False).flat
    for ax, panel, data in zip(axes, spec.panels, frames, strict=False):
        _draw(ax, data, panel)
    tables = "".join(table_html(frame if query is None else con.execute(query).df(), table_id)
                     for query, table_id in spec.tables)
    return embedded(fig, spec.caption) + tables
