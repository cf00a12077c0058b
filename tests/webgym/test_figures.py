"""The figure renderer (webgym/figures.py) and the report's table of figure specs."""

from __future__ import annotations

import re

import duckdb

from webgym import report, warehouse
from webgym.figures import FigureSpec, Panel, render_figure

SPEC = FigureSpec(
    "demo", "Demo", "SELECT * FROM points", "no points",
    (Panel("line", "value", group="kind", ylabel="value"),
     Panel("bar", "n", x="name", query="SELECT * FROM extra", title="extra")),
    "A caption <with> markup.", ((None, "demo-points"), ("SELECT * FROM extra", "demo-extra")), size=(4, 2))


def _con(points: int, extra: int) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE points AS SELECT i % 3 AS iteration, i * 0.5 AS value, "
                "CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS kind FROM range(?) t(i)", [points])
    con.execute("CREATE TABLE extra AS SELECT 'x' || i AS name, i AS n FROM range(?) t(i)", [extra])
    return con


def test_a_spec_renders_one_figure_its_escaped_caption_and_its_tables():
    page = render_figure(SPEC, _con(6, 2))
    assert page.count("data:image/png;base64,") == 1
    assert "A caption &lt;with&gt; markup." in page
    assert re.findall(r'<table class="dataframe" id="([^"]+)"', page) == ["demo-points", "demo-extra"]
    assert page.count("<tr") == 1 + 6 + 1 + 2  # header and rows of each table


def test_no_data_only_when_the_query_and_every_panel_query_are_empty():
    assert render_figure(SPEC, _con(0, 0)) == '<p class="no-data">no data yet: no points</p>'
    assert "data:image/png" in render_figure(SPEC, _con(0, 2))  # the extra panel still has rows


def test_every_report_figure_has_its_own_anchor_and_its_queries_bind_on_an_empty_lake(lake):
    anchors = [anchor for anchor, _, _ in report.SECTIONS]
    assert len(anchors) == len(set(anchors)) and {spec.anchor for spec in report.FIGURES} <= set(anchors)
    with warehouse.connect(lake) as con:
        for spec in report.FIGURES:
            assert render_figure(spec, con) == f'<p class="no-data">no data yet: {spec.empty}</p>'


def test_number_and_time_cells_are_marked_so_narrow_tables_never_split_them():
    import pandas as pd

    from webgym.figures import table_html

    page = table_html(pd.DataFrame({"path": ["/ckpt/it2-0042"], "loss": [1234.5678],
                                    "at": [pd.Timestamp("2026-11-22 03:00", tz="UTC")]}), "t")
    assert re.findall(r"<td( class=\"num\")?>([^<]*)</td>", page) == [
        ("", "/ckpt/it2-0042"), (' class="num"', "1235"), (' class="num"', "2026-11-22 03:00:00+00:00")]
    assert "td.num { overflow-wrap: normal; white-space: nowrap; }" in report.STYLE
