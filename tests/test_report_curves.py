"""The report's curves section fits as ``perfmodel fit`` and the Curves page fit (one setting, one path), and
says the import warnings that concern the curves it draws."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from test_planner import synthetic_runs

from perfmodel.api import import_files
from perfmodel.curve_tables import config_label, default_curve_by, fits_summary
from perfmodel.curves import DEFAULT_N_BOOT, fit_curves
from perfmodel.report import build_report
from perfmodel.store import Store

H200 = Path("custom-concurrency-json") / "gpu_conc__H200_benchmark_summary_20250814_182107.json"


def _curves(runs: pd.DataFrame, **kw: object) -> pd.DataFrame:
    rep = build_report(runs, dataset_name="d", plan_inputs=None, accuracy=False, predictions=False, **kw)
    return rep.section("Saturation curves and knees")


def test_report_intervals_are_those_of_fit_and_the_curves_page() -> None:
    # The report had fitted with 100 replicates and seed 0 (the others 200 and a seed per configuration) and shown
    # b90 with no interval: the same curve read other knee intervals in the report than on the page.
    runs = synthetic_runs(noise=0.05)
    by = default_curve_by(runs)
    table = fit_curves(runs, by, n_boot=DEFAULT_N_BOOT)
    ref = fits_summary(table, by)
    labels = [config_label({c: rec[c] for c in by}) for rec in table.to_dict("records")]
    ref_by_label = dict(zip(labels, ref.to_dict("records"), strict=True))
    sec = _curves(runs)
    shown = sec.tables[0][1]
    assert len(shown)
    for rec in shown.to_dict("records"):
        r = ref_by_label[rec["configuration"]]
        assert rec["knee batch [CI]"] == (r["knees"] or "none")
        assert rec["b90"] == r["b90"] and "[" in rec["b90"]  # with its interval
        assert rec["b95"] == r["b95"]


def test_report_says_the_import_warning_on_the_batch_axis(formats_dir: Path) -> None:
    info, _ = import_files([formats_dir / H200], store=Store())
    runs = Store().runs(info.id)
    # from the store, through the dataset's info (as the CLI and the Planner page build it)
    rep = build_report(runs, dataset_name=info.name, info=info, accuracy=False, predictions=False)
    paras = " ".join(rep.section("Saturation curves and knees").paragraphs)
    assert "requests in flight than configured" in paras and "Import warning for h200" in paras
    # given directly
    issues = Store().issues(info.id)
    assert "requests in flight" in " ".join(_curves(runs, issues=issues).paragraphs)
    # a dataset without warnings says nothing of the kind
    assert "Import warning" not in " ".join(_curves(synthetic_runs(noise=0.02)).paragraphs)
