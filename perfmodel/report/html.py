"""Render a :class:`~perfmodel.report.build.Report` as one self-contained HTML file.

The page carries plotly.js inline (the same bundle ``include_plotlyjs=True``
embeds), so it opens offline and requests nothing from a CDN. Every string
from the user or the data (dataset names, table cells, notes) goes through
jinja2 with autoescaping; figure JSON is embedded with ``<``, ``>`` and ``&``
escaped as JSON unicode escapes, so a ``</script>`` inside a label cannot end
the script element.
"""

from __future__ import annotations

import json
from typing import Any

import jinja2
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from markupsafe import Markup

from ..curve_tables import compact_number
from .build import Report

__all__ = ["render_html", "figure_script", "PLOT_CLASS"]

PLOT_CLASS = "pm-plot"
"""CSS class of every chart container (the browser test counts rendered ones)."""

_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:; font-src data:">
<title>{{ report.title }}</title>
<style>
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 2rem auto;
       max-width: 1200px; color: #1d2733; line-height: 1.45; padding: 0 1rem; }
h1 { font-size: 1.7rem; margin-bottom: .2rem; } h2 { border-bottom: 2px solid #d8dee6; padding-bottom: .2rem;
     margin-top: 2.2rem; font-size: 1.3rem; page-break-after: avoid; }
.meta { color: #5b6b7c; font-size: .9rem; }
table { border-collapse: collapse; margin: .6rem 0 1.2rem; font-size: .8rem; width: 100%; }
th, td { border: 1px solid #d8dee6; padding: .25rem .45rem; text-align: left; vertical-align: top; }
th { background: #f1f4f8; } caption { text-align: left; font-weight: 600; padding: .3rem 0; }
.pm-plot { width: 100%; min-height: 420px; page-break-inside: avoid; }
tr, caption { break-inside: avoid; page-break-inside: avoid; } thead { display: table-header-group; }
caption { break-after: avoid; page-break-after: avoid; }
nav ol { columns: 2; font-size: .9rem; }
section { page-break-inside: auto; }
@media print { body { margin: 0; max-width: none; } nav, .screen-only { display: none; } }
</style>
<script>{{ plotly_js }}</script>
</head>
<body>
<h1>{{ report.title }}</h1>
<p class="meta">Generated {{ report.generated_at }} by perfmodel {{ version }}.<span class="screen-only"> Self-contained: charts are embedded and work offline.</span></p>
<nav><ol>{% for s in report.sections %}<li><a href="#s{{ loop.index }}">{{ s.title }}</a></li>{% endfor %}</ol></nav>
{% for s in report.sections %}{% set si = loop.index %}
<section id="s{{ si }}">
<h2>{{ s.title }}</h2>
{% for p in s.paragraphs %}<p>{{ p }}</p>
{% endfor %}
{% for caption, cols, rows in tables[si - 1] %}
<table><caption>{{ caption }}</caption>
<thead><tr>{% for c in cols %}<th>{{ c }}</th>{% endfor %}</tr></thead>
<tbody>{% for r in rows %}<tr>{% for v in r %}<td>{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
</table>
{% endfor %}
{% for fig in figures[si - 1] %}<div class="pm-plot" id="fig-{{ si }}-{{ loop.index }}"></div>
<script>{{ fig }}</script>
{% endfor %}
</section>
{% endfor %}
<script>window.PM_FIGURES_EXPECTED = {{ n_figures }};</script>
</body>
</html>
"""

_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
_TPL = _ENV.from_string(_TEMPLATE)


def _json_for_script(obj: Any) -> str:
    # JSON is valid JavaScript; escaping <, > and & keeps "</script>" in a label from ending the element.
    text = json.dumps(obj, cls=_Encoder)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


class _Encoder(json.JSONEncoder):
    def default(self, o: Any) -> Any:  # noqa: D102 - JSONEncoder hook
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        return super().default(o)


def figure_script(fig: go.Figure, div_id: str, *, static: bool = False) -> Markup:
    """The JavaScript that draws ``fig`` into the element ``div_id``.

    Parameters
    ----------
    fig
        A plotly figure.
    div_id
        Id of the target element.
    static
        Draw a non-interactive chart (for print/PDF).

    Returns
    -------
    markupsafe.Markup
        Script text, safe to place inside ``<script>``.
    """
    spec = json.loads(pio.to_json(fig, validate=False))
    config = {"responsive": not static, "displaylogo": False, "staticPlot": static}
    return Markup(f"Plotly.newPlot({json.dumps(div_id)}, {_json_for_script(spec.get('data', []))}, "
                  f"{_json_for_script(spec.get('layout', {}))}, {json.dumps(config)});")


def _cell(v: Any) -> str:
    if v is None or v is pd.NA:
        return ""
    if isinstance(v, float | np.floating):
        if not np.isfinite(v):
            return "" if np.isnan(v) else str(v)
        return compact_number(float(v))  # 12,345 and 0.000012, never 1.234e+04
    return str(v)


def render_html(report: Report, *, static: bool = False) -> str:
    """The report as one HTML document.

    Parameters
    ----------
    report
        Built by :func:`perfmodel.report.build_report`.
    static
        Non-interactive charts (used for the PDF).

    Returns
    -------
    str
    """
    from plotly.offline import get_plotlyjs

    from .. import __version__

    tables = [[(cap, [str(c) for c in df.columns], [[_cell(v) for v in row] for row in df.itertuples(index=False)])
               for cap, df in s.tables] for s in report.sections]
    figures = [[figure_script(f, f"fig-{i}-{j}", static=static) for j, f in enumerate(s.figures, start=1)]
               for i, s in enumerate(report.sections, start=1)]
    return _TPL.render(report=report, tables=tables, figures=figures, version=__version__,
                       plotly_js=Markup(get_plotlyjs()), n_figures=sum(len(f) for f in figures))
