"""Capacity reports: content (:func:`build_report`), HTML (:func:`render_html`), PDF (:func:`html_to_pdf`).

>>> from perfmodel.report import build_report, write_report   # doctest: +SKIP
>>> rep = build_report(runs, dataset_name="bench", plan_inputs=inputs)  # doctest: +SKIP
>>> write_report(rep, "report.html")                               # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

from ..errors import PerfmodelError
from .build import ACCURACY_PREDICTOR, MAX_CURVES, SECTION_TITLES, Report, Section, build_report
from .html import PLOT_CLASS, render_html
from .pdf import html_to_pdf

__all__ = ["Report", "Section", "build_report", "render_html", "html_to_pdf", "write_report", "SECTION_TITLES",
           "MAX_CURVES", "ACCURACY_PREDICTOR", "PLOT_CLASS", "REPORT_SUFFIXES"]

REPORT_SUFFIXES = (".html", ".pdf")


def write_report(report: Report, path: str | Path) -> Path:
    """Write a report as HTML or PDF, chosen by the file suffix.

    Parameters
    ----------
    report
        The built report.
    path
        ``*.html`` (self-contained, interactive) or ``*.pdf`` (static charts; needs Chromium).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    PerfmodelError
        Another suffix, or the PDF could not be printed (install hint in the message).
    """
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in REPORT_SUFFIXES:
        raise PerfmodelError(f"{out}: a report is written as .html or .pdf, not {suffix or 'no suffix'!r}")
    if suffix == ".pdf":
        return html_to_pdf(render_html(report, static=True), out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(report), encoding="utf-8")
    return out
