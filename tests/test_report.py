"""Reports: sections, escaping of user text, self-contained HTML rendered in Chromium with no network request,
PDF with the expected sections whose pages render to PNG."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_planner import synthetic_runs

from perfmodel.errors import PerfmodelError
from perfmodel.report import SECTION_TITLES, build_report, render_html, write_report

EVIL = "<script>alert('pm')</script> & co"
PLAN = {"workload": {"request_rate_rps": 10, "input_len_tok": 1000, "output_len_tok": 1000},
        "slo": {"e2e_s": 12}, "prices": {"h100-sxm": 2.0}}
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def report():  # noqa: ANN201
    runs = pd.concat([synthetic_runs(noise=0.02), synthetic_runs(hardware="a100-40gb", model="llama-3-70b")],
                     ignore_index=True)
    return build_report(runs, dataset_name=EVIL, plan_inputs=PLAN, accuracy=False, predictions=False)


def test_sections_and_content(report) -> None:  # noqa: ANN001
    assert tuple(s.title for s in report.sections) == SECTION_TITLES
    summary = report.section("Executive summary").paragraphs[0]
    assert "4 x h100-sxm" in summary and "8.00 USD/h" in summary
    cand = report.section("Candidates")
    row = cand.tables[0][1].iloc[0]  # energy also as a bill reads it: J per token / 3.6 = kWh per million tokens
    j, kwh = (float(str(row[c]).split()[0]) for c in ("J/output tok", "kWh/M output tok"))
    assert kwh == pytest.approx(j / 3.6, rel=0.01)
    # the band does not move the device count here: "4", not "4 [4, 4]"; the summary says so in words
    assert cand.tables[0][1].iloc[0]["devices [band]"] == "4" and "4 x h100-sxm (the same across the band)" in summary
    assert "memory does not fit" in cand.tables[1][1].iloc[0]["reason"]
    assert len(cand.figures) == 3  # the three Pareto fronts
    assert report.section("Saturation curves and knees").figures
    assert "Omitted" in report.section("Top feature attributions").paragraphs[0]


def test_user_text_is_escaped_in_html(report) -> None:  # noqa: ANN001
    html = render_html(report)
    assert EVIL not in html and "<script>alert(" not in html
    assert "&lt;script&gt;alert(&#39;pm&#39;)&lt;/script&gt; &amp; co" in html
    assert 'src="http' not in html and "<link" not in html


def test_bad_suffix(report, tmp_path) -> None:  # noqa: ANN001
    with pytest.raises(PerfmodelError, match=r"\.html or \.pdf"):
        write_report(report, tmp_path / "r.docx")


@pytest.mark.browser
@pytest.mark.slow
def test_html_renders_offline_and_pdf_has_sections(report, tmp_path) -> None:  # noqa: ANN001
    if not CHROMIUM.is_file():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    pdfium = pytest.importorskip("pypdfium2")
    from perfmodel.report.pdf import CHROMIUM_ARGS

    html_path = write_report(report, tmp_path / "report.html")
    requests: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS))
        page = browser.new_page()
        page.on("request", lambda r: requests.append(r.url))
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(html_path.as_uri())
        page.wait_for_function("Array.from(document.querySelectorAll('.pm-plot')).every(d => d.querySelector("
                               "'.main-svg'))", timeout=30_000)
        n_plots = page.locator(".pm-plot").count()
        n_rendered = page.locator(".pm-plot .main-svg").count()
        expected = page.evaluate("window.PM_FIGURES_EXPECTED")
        title = page.title()
        browser.close()
    assert n_plots == expected == 5 and n_rendered >= n_plots
    assert [u for u in requests if not u.startswith("file://")] == [] and len(requests) == 1
    assert dialogs == [] and title.startswith("Capacity report: <script>")

    pdf_path = write_report(report, tmp_path / "report.pdf")
    doc = pdfium.PdfDocument(str(pdf_path))
    text = "\n".join(doc[i].get_textpage().get_text_range() for i in range(len(doc)))
    for title in SECTION_TITLES:
        assert title in text, title
    assert "<script>alert('pm')</script> & co" in text  # shown literally, not executed
    img = doc[0].render(scale=1).to_pil()
    png = tmp_path / "page1.png"
    img.save(png)
    arr = np.asarray(img.convert("L"))
    assert png.stat().st_size > 10_000 and arr.std() > 5  # a page with content, not blank
    assert len(doc) >= 3


def test_accuracy_section_counts_the_held_out_configurations_and_says_when_they_are_few() -> None:
    from _predict_data import synthetic_runs as curve_runs

    from perfmodel.report.build import _accuracy_section

    runs = curve_runs(noise=0.03)  # 8 configurations: 2 held out
    sec = _accuracy_section(runs, "linear")
    text = " ".join(sec.paragraphs)
    assert "trained on 6 of the 8 configurations and scored on the other 2" in text
    assert "With 2 configurations held out these figures are rough" in text
    assert sec.tables[0][1]["held-out points"].iloc[0] == 8  # 2 configurations x 4 batches
    # A row without a throughput (a failed run of a ninth configuration) is not scored: the counts say so.
    failed = runs.iloc[[0]].assign(input_len_tok=4096.0, output_throughput_tok_s=float("nan"))
    text = " ".join(_accuracy_section(pd.concat([runs, failed], ignore_index=True), "linear").paragraphs)
    assert "trained on 6 of the 8 configurations and scored on the other 2" in text


def test_without_a_plan_the_report_says_how_to_give_one_in_both_clients() -> None:
    """The report is built by the CLI and by the app's Report page: "pass --plan plan.yaml" alone means
    nothing on the page, so the no-plan text names both ways to give a plan."""
    from perfmodel.report.build import _predictions_section

    rep = build_report(synthetic_runs(noise=0.02), dataset_name="d", accuracy=False, predictions=False)
    texts = [rep.section("Executive summary").paragraphs[0],
             _predictions_section(None, None, "linear", "").paragraphs[0]]
    for text in texts:
        assert "No plan was given" in text and "pass --plan plan.yaml" not in text
        assert "--plan on the command line" in text and "Saved plan selector on the Report page" in text


def test_a_point_the_predictor_cannot_run_says_why() -> None:
    # Guards: a predictor that reads the query at fp32 (as roofline-gbm does for a configuration trained at fp32)
    # gives Llama-3-8B on a 24 GB L4 no prediction; the cell read a bare "n/a".
    from test_planner import _Fp32Predictor

    from perfmodel.planner import plan
    from perfmodel.report.build import _predictions_section

    res = plan({**PLAN, "prices": {"l4": 0.8}}, synthetic_runs(hardware="l4"))
    assert len(res.table) == 1  # 16 GB of bf16 weights fit; 32 GB of fp32 do not
    sec = _predictions_section(res, _Fp32Predictor(), "fp32-trained", "")
    table = sec.tables[0][1]
    assert table["fp32-trained tok/s [band]"].tolist() == ["cannot run"]
    assert table["fp32-trained confidence"].tolist() == ["0.00"] and table["in domain"].tolist() == ["no"]
    assert any(p.startswith("The fp32-trained predictor gives no prediction where the configuration cannot run: "
                            "llama-3-8b's weights, 32 GB in 32-bit, exceed the 24 GB of memory of 1 x l4")
               for p in sec.paragraphs)


def test_a_candidate_is_predicted_at_the_setting_it_was_sized_at() -> None:
    # Guards: the section queried llama.cpp's point without its n_batch, so the predictor answered over every
    # setting it was trained at (out of domain) rather than at the one the plan chose.
    from test_planner import _RecordingPredictor

    from perfmodel.planner import plan
    from perfmodel.report.build import _predictions_section

    runs = pd.concat([synthetic_runs().assign(fw_n_batch=1.0),
                      synthetic_runs().assign(fw_n_batch=64.0, output_throughput_tok_s=lambda d:
                                              d["output_throughput_tok_s"] * 1.8)], ignore_index=True)
    res = plan(PLAN, runs)
    assert res.table["fw_n_batch"].tolist() == [64.0]
    rec = _RecordingPredictor()
    _predictions_section(res, rec, "recording", "")
    [q] = rec.queries
    assert q["fw_n_batch"].tolist() == [64.0] and "fw_num_threads" not in q.columns


def test_a_plan_that_leaves_no_candidate_is_told_apart_from_no_plan() -> None:
    # Guards: the Predictions section said "No plan was given" when the plan's SLOs rejected every candidate.
    plan = {**PLAN, "slo": {"e2e_s": 0.001}}
    rep = build_report(synthetic_runs(noise=0.02), dataset_name="d", plan_inputs=plan, accuracy=False,
                       predictions=True)
    assert "no candidate is feasible" in rep.section("Executive summary").paragraphs[0]
    (text,) = rep.section("Predictions with bands and confidence").paragraphs
    assert text.startswith("The plan left no candidate that meets its targets") and "No plan" not in text


def test_numbers_read_without_e_notation() -> None:
    # Guards: a busy GPU's numbers in the report read "2e+04 req/s", "1.903e+04 [1.879e+04, ...]" tok/s and a
    # knee at batch "1.58e+03" (Python's g format switches to e-notation from 10**digits on).
    import re

    runs = synthetic_runs(noise=0.02)
    runs["output_throughput_tok_s"] *= 50  # tens of thousands of tok/s, as a small model on an H200
    runs["batch_size"] *= 64  # concurrency in the thousands
    plan = {"workload": {"request_rate_rps": 20000, "input_len_tok": 1000, "output_len_tok": 1000},
            "slo": {"e2e_s": 2000}, "prices": {"h100-sxm": 2.0}}
    rep = build_report(runs, dataset_name="busy", plan_inputs=plan, accuracy=False, predictions=False)
    html = render_html(rep)
    text = re.sub(r"<script>.*?</script>", "", html[html.index("<body>"):], flags=re.S)
    assert not re.findall(r".{20}\de[+-]\d.{10}", text)
    workload = dict(rep.section("Workload and SLOs").tables[0][1].to_numpy())
    assert workload["request rate"] == "20,000 req/s" and workload["end-to-end target"] == "33.3 min"
    curves = rep.section("Saturation curves and knees").tables[0][1]
    assert re.fullmatch(r"[\d,]+ \[[\d,]+, [\d,]+\]", curves["knee batch [CI]"].iloc[0])


def test_attributions_name_features_in_words_beside_the_raw_name() -> None:
    # Guards: "Top feature attributions" listed raw names only (l2_reuse, id_hw_a100-40gb), which a reader of
    # the report cannot decode; the raw name stays for whoever searches the code or the CLI output for it.
    import html as H

    from perfmodel import explain as E
    from perfmodel.features import feature_doc, feature_label
    from perfmodel.report.build import Report, _attribution_section

    runs = pd.concat([synthetic_runs(noise=0.02), synthetic_runs(hardware="a100-40gb", model="llama-3-70b")],
                     ignore_index=True)
    model = E.fit_gbdt(runs, "identity", n_estimators=20, max_depth=3)  # few enough to be all shown
    section = _attribution_section(runs, model)
    (_, imp), (caption, terms) = section.tables
    assert list(imp.columns[:2]) == ["feature", "label"]
    assert imp["label"].tolist() == [feature_label(f) for f in imp["feature"]]
    assert "hardware is a100-40gb (1/0)" in imp["label"].tolist()  # a dynamic feature, its value filled in
    assert terms["feature"].tolist() == imp["feature"].tolist()
    assert terms["formula"].tolist() == [feature_doc(f).formula for f in imp["feature"]]
    assert "ii = input length" in caption
    page = render_html(Report(title="t", generated_at="now", sections=(section,)))
    assert all(H.escape(label) in page for label in imp["label"])


def test_accuracy_and_attribution_tables_read_in_words_and_percent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hold-out table was headed n_test, median_ape_pct, p90_ape_pct, r2_log, coverage, median_rel_width
    with coverage 1 for 100 %; the importance table mean_abs_shap and share 0.3131 for 31 %."""
    from types import SimpleNamespace

    from _predict_data import synthetic_runs as curve_runs

    import perfmodel.evaluate
    from perfmodel.report.build import _accuracy_section, _attribution_tables

    scored = pd.DataFrame({"predictor": ["p"], "protocol": ["config"], "n_test": [30.0], "median_ape_pct": [29.7],
                           "p90_ape_pct": [485.4], "r2_log": [0.79], "coverage": [0.9], "median_rel_width": [2.06]})
    monkeypatch.setattr(perfmodel.evaluate, "evaluate", lambda *a, **k: SimpleNamespace(table=scored))
    t = _accuracy_section(curve_runs(noise=0.03), "p").tables[0][1]
    assert list(t.columns) == ["predictor", "held out by", "held-out points", "median error (%)",
                               "90th-percentile error (%)", "R\u00b2 of log throughput", "inside the 90% band (%)",
                               "median band width (% of prediction)"]
    row = t.iloc[0]
    assert row["held-out points"] == 30 and row["inside the 90% band (%)"] == pytest.approx(90)
    assert row["median band width (% of prediction)"] == pytest.approx(206)
    imp = pd.DataFrame({"feature": ["batch_size", "input_len_tok"], "kind": ["workload", "workload"],
                        "mean_abs_shap": [0.3, 0.1], "share": [0.75, 0.25], "rank": [1, 2]})
    shown = _attribution_tables(imp)[0][1]
    assert list(shown.columns) == ["feature", "label", "kind", "mean |SHAP|", "share (%)", "rank"]
    assert shown["share (%)"].tolist() == [75.0, 25.0]


def test_next_cheapest_names_its_model_and_the_price_hint_names_both_clients() -> None:
    # Guards: with two models on one device the summary read "1 x h200 ... perfmodel-large-llama ..." and then
    # "Next cheapest: 1 x h200 (transformers, 1 per replica)", the same words; and a report built on the
    # Report page told its reader to pass --price, a command-line flag.
    runs = pd.concat([synthetic_runs(model="llama-3-8b"), synthetic_runs(model="llama-3.1-8b", noise=0.0),
                      synthetic_runs(hardware="h200")], ignore_index=True)  # h200: no catalog price
    runs.loc[runs["model"] == "llama-3.1-8b", "output_throughput_tok_s"] *= 0.8
    plan = {**PLAN, "prices": {"h100-sxm": 2.0}}
    paras = build_report(runs, dataset_name="d", plan_inputs=plan, accuracy=False,
                         predictions=False).section("Executive summary").paragraphs
    # each model is priced on one device only: the other candidate is another model, and says so (it read
    # "Next cheapest", which a reader takes for a cheaper way to serve the same model)
    (alt,) = [p for p in paras if p.startswith(("Next cheapest", "Cheapest with another model"))]
    assert alt.startswith("Cheapest with another model: ")
    assert "llama-3.1-8b on vllm" in alt or "llama-3-8b on vllm" in alt
    (hint,) = [p for p in paras if "no price" in p]
    assert "--price HW=VALUE on the command line" in hint and "Price overrides on the Planner page" in hint


def test_curves_are_counted_and_fitted_per_thread_setting_as_on_the_curves_page() -> None:
    # The report grouped by six fixed columns: the samples' 1- and 2-thread CPU runs made one curve, and it
    # counted 16 configurations where the Curves page counted 17.
    from perfmodel.curves import fit_curves
    from perfmodel.plots import default_curve_by

    one = synthetic_runs(noise=0.02).assign(fw_num_threads=1.0)
    two = one.assign(fw_num_threads=2.0, output_throughput_tok_s=one["output_throughput_tok_s"] * 0.5)
    runs = pd.concat([one, two], ignore_index=True)
    n_page = len(fit_curves(runs, by=default_curve_by(runs), intervals="none"))
    rep = build_report(runs, dataset_name="threads", plan_inputs=None, accuracy=False, predictions=False)
    sec = rep.section("Saturation curves and knees")
    assert sec.paragraphs[0].startswith(f"{n_page} configuration(s)")
    table = sec.tables[0][1]
    assert any("1 thread" in c for c in table["configuration"]) and any("2 threads" in c for c in table["configuration"])
    plateaus = [float(str(v).split(" ")[0].replace(",", "")) for v in table["plateau tok/s"]
                if str(v)[:1].isdigit()]
    assert len(plateaus) >= 2 and max(plateaus) / min(plateaus) > 1.5  # not one curve through both settings


def test_curves_far_apart_share_a_log_axis_and_close_ones_a_linear_one() -> None:
    # A CPU beside a GPU (the bundled samples): on a linear axis the CPU's curve was a line along zero.
    gpu = synthetic_runs(noise=0.02)
    cpu = synthetic_runs(noise=0.02, hardware="a10g").assign(
        output_throughput_tok_s=lambda d: d["output_throughput_tok_s"] / 100)
    far = build_report(pd.concat([gpu, cpu], ignore_index=True), dataset_name="far", plan_inputs=None,
                       accuracy=False, predictions=False).section("Saturation curves and knees")
    assert far.figures[0].layout.yaxis.type == "log"
    # the range is the points' and lines', not the bands' lower edges (which stretched it to 0.5 tok/s)
    fig = far.figures[0]
    lo_shown = 10 ** fig.layout.yaxis.range[0]
    measured = [y for t in fig.data if t.meta == "measured" for y in t.y]
    assert min(measured) / 2 < lo_shown < min(measured)
    assert all(min(t.y) >= lo_shown for t in fig.data if t.meta == "fit")  # a band may be cut, a line not
    assert any("logarithmic" in p and "about 100×" in p for p in far.paragraphs)
    near = build_report(pd.concat([gpu, cpu.assign(output_throughput_tok_s=lambda d: d["output_throughput_tok_s"] * 50)],
                                  ignore_index=True), dataset_name="near", plan_inputs=None, accuracy=False,
                        predictions=False).section("Saturation curves and knees")
    assert near.figures[0].layout.yaxis.type != "log"
    assert not any("logarithmic" in p for p in near.paragraphs)


def test_a_predicted_candidate_has_one_answer_in_the_predictions_table() -> None:
    # A reviewer found the same H100 point twice: the planner's prediction at confidence 0.95 [1,706, 2,040] in
    # a column named "measured-curve", and the report's own predictor, queried without the configuration's
    # dtype and settings, at 0.54 [1,018, 3,529].
    plan = {**PLAN, "workload": {"request_rate_rps": 10, "input_len_tok": 400, "output_len_tok": 100}, "slo": {},
            "predict": True}
    rep = build_report(synthetic_runs(noise=0.02), dataset_name="d", plan_inputs=plan, accuracy=False,
                       predictions=True)
    sec = rep.section("Predictions with bands and confidence")
    table = sec.tables[0][1]
    assert table["source"].str.startswith("predicted").all()
    assert "planner tok/s [band]" in table.columns and "measured-curve tok/s [band]" not in table.columns
    assert not any(c.endswith("tok/s [band]") and c != "planner tok/s [band]" for c in table.columns)
    assert any("planner's columns are its answers" in p for p in sec.paragraphs)
    # One candidate measured at the workload's lengths, one predicted there: the predictor checks the first only.
    runs = pd.concat([synthetic_runs(noise=0.02),
                      synthetic_runs(noise=0.02, hardware="a100-40gb").assign(input_len_tok=400.0, output_len_tok=100.0)],
                     ignore_index=True)
    plan["prices"] = {"h100-sxm": 2.0, "a100-40gb": 1.5}
    table = build_report(runs, dataset_name="d", plan_inputs=plan, accuracy=False, predictions=True).section(
        "Predictions with bands and confidence").tables[0][1].set_index("source")
    [name] = [c for c in table.columns if c.endswith("tok/s [band]") and not c.startswith("planner")]
    pred = table.loc[[s for s in table.index if s.startswith("predicted")]]
    meas = table.loc[[s for s in table.index if not s.startswith("predicted")]]
    assert len(pred) == 1 and len(meas) == 1
    assert pred[name].tolist() == ["the planner's (predicted)"] and meas[name].iloc[0][0].isdigit()


def test_the_candidates_long_texts_are_numbered_notes_below_the_table(report) -> None:  # noqa: ANN001
    # Printed, the candidates table took 5 of 14 pages at four rows a page: its "sized from", latency basis,
    # price source and note texts wrapped into tall cells.
    cand = report.section("Candidates")
    table = cand.tables[0][1]
    title, notes = cand.tables[-1]
    assert title.startswith("Notes to the candidates")
    refs = {v for c in ("sized from", "latency basis", "price source", "note") for v in table[c] if v}
    assert refs and all(re.fullmatch(r"\[\d+\]", v) for v in refs)
    assert set(notes["note"]) == refs and notes["text"].is_unique and len(notes) == len(refs)
    assert any(t.startswith("measured") or "curve" in t for t in notes["text"])


def test_a_plan_that_predicts_unmeasured_hardware_is_scored_holding_hardware_out() -> None:
    # The accuracy section held out configurations only, which keeps every hardware in training: a report
    # recommending an L40S the data never ran quoted that figure for it.
    from _predict_data import synthetic_runs as curve_runs

    runs = curve_runs(noise=0.03)  # H100 and A100-40GB, two models, two lengths
    plan = {**PLAN, "hardware": ["h100-sxm", "l40s"], "predict": True}
    acc = build_report(runs, dataset_name="d", plan_inputs=plan, accuracy=True, predictions=True).section(
        "Measured accuracy on held-out data")
    table = acc.tables[0][1]
    assert table["held out by"].tolist() == ["config", "hardware"]
    assert all(pd.to_numeric(table["held-out points"]) > 0)
    # each row is also said in words a manager can act on, with the table's own (3-digit) figures
    said = [p for p in acc.paragraphs if "half the held-out points were predicted within" in p]
    assert [p.split(":")[0] for p in said] == ["Configurations held out", "Hardware held out"]
    for p, (_, row) in zip(said, table.iterrows(), strict=True):
        assert f"within {row['median error (%)']:.3g}%" in p
        cov = row["inside the 90% band (%)"]
        assert (f"band held {cov:.0f}%" in p or f"held only {cov:.0f}%" in p) if np.isfinite(cov) else "90% band" not in p
    [why] = [p for p in acc.paragraphs if "no runs of" in p]
    assert "l40s" in why and "holds out each hardware in turn (2 of them)" in why and "h100" not in why
    # every candidate measured: the configuration holdout alone, as before
    plain = build_report(runs, dataset_name="d", plan_inputs={**plan, "hardware": ["h100-sxm"]}, accuracy=True,
                         predictions=True).section("Measured accuracy on held-out data")
    assert plain.tables[0][1]["held out by"].tolist() == ["config"]
    assert not any("no runs of" in p for p in plain.paragraphs)


def test_bands_that_round_to_their_value_and_times_are_written_plainly() -> None:
    # "0.152 [0.152, 0.152]", "1 [1, 1]", "optimistic_only" and "2026-11-29 20:57:08.050443+00:00" in a report
    # for a manager
    from perfmodel.report.build import STATUS_WORDS, _band, _when

    assert _band(0.1521, 0.1519, 0.1522, "{:,.3f}".format) == "0.152"
    assert _band(0.152, 0.14, 0.16, "{:,.3f}".format) == "0.152 [0.140, 0.160]"
    assert _band(1.0, float("nan"), 2.0) == "1"
    assert STATUS_WORDS["optimistic_only"] == "optimistic only"
    assert _when("2026-11-29 20:57:08.050443+00:00") == "2026-11-29 20:57:08 UTC"
    assert _when("2026-12-02T08:05:32.255293Z") == "2026-12-02 08:05:32 UTC" and _when("n/a") == "n/a"


def test_candidates_of_several_models_are_named_by_their_model() -> None:
    # Two models on one H200 read "h200 transformers x1" twice in the report's tables and on the Pareto charts.
    from perfmodel.pareto import candidate_labels

    t = pd.DataFrame({"hardware": ["h200", "h200"], "framework": ["transformers"] * 2, "device_count": [1, 1],
                      "model": ["medium-llama", "large-llama"]})
    assert candidate_labels(t).tolist() == ["medium-llama · h200 transformers x1", "large-llama · h200 transformers x1"]
    assert candidate_labels(t.iloc[:1]).tolist() == ["h200 transformers x1"]
    runs = pd.concat([synthetic_runs(model="llama-3-8b"), synthetic_runs(model="llama-3.1-8b")], ignore_index=True)
    rep = build_report(runs, dataset_name="d", plan_inputs={**PLAN, "models": []}, accuracy=False, predictions=False)
    cands = rep.section("Predictions with bands and confidence").tables[0][1]["candidate"].tolist()
    assert len(cands) == 2 and len(set(cands)) == 2 and all(" · h100-sxm vllm x" in c for c in cands)
    front = rep.section("Candidates").figures[0]
    assert all(" · " in str(x) for tr in front.data for x in (tr.text if tr.text is not None else []))


def test_hold_out_figures_in_words() -> None:
    from perfmodel.report.build import _accuracy_words

    close = _accuracy_words({"protocol": "config", "median_ape_pct": 2.0, "p90_ape_pct": 9.0, "coverage": 91.0,
                             "median_rel_width": 12.0})
    assert "close enough to size capacity from" in close and "about as it should" in close
    far = _accuracy_words({"protocol": "hardware", "median_ape_pct": 29.73, "p90_ape_pct": 452.9,
                           "coverage": 100.0, "median_rel_width": 304.4})
    assert far.startswith("Hardware held out: half the held-out points were predicted within 29.7% of their "
                          "measurement and nine in ten within 453%.")
    assert "too far off to size capacity from" in far and "wider than needed (typically 304% of" in far
    tail = _accuracy_words({"protocol": "model", "median_ape_pct": 7.0, "p90_ape_pct": 49.0, "coverage": 70.0})
    assert "one in ten is off by more than 49%" in tail and "held only 70%" in tail


def test_attributions_are_over_the_plan_candidates_runs() -> None:
    # The sample's report ranked torch threads first (its CPU runs) in a report about an H200 plan.
    from _predict_data import synthetic_runs as curve_runs

    runs = curve_runs(noise=0.03)  # H100 and A100-40GB, two models, two lengths
    plan = {**PLAN, "hardware": ["h100-sxm"]}
    attrs = build_report(runs, dataset_name="d", plan_inputs=plan, accuracy=False, predictions=True).section(
        "Top feature attributions")
    which = attrs.paragraphs[0]
    n_h100 = int((runs["hardware"] == "h100-sxm").sum())
    assert which.startswith(f"Over the {n_h100:,} runs of the plan's candidates (h100-sxm ")
    assert f"not the dataset's other {len(runs) - n_h100:,}" in which and attrs.tables
    every = build_report(runs, dataset_name="d", accuracy=False, predictions=True).section("Top feature attributions")
    assert every.paragraphs[0] == "Over every run of the dataset."


def test_the_no_plan_headline_leaves_out_runs_faster_than_physics() -> None:
    # It had quoted LLM-Inference-Bench's 65,692 tok/s on 4 x H100 (bound 14,068), a run the Data page flags.
    from perfmodel.whatif import suspect_mask

    runs = synthetic_runs(noise=0.02)
    honest = runs["output_throughput_tok_s"].max()
    fast = runs.iloc[[0]].assign(output_throughput_tok_s=1e9, batch_size=2.0)
    both = pd.concat([runs, fast], ignore_index=True)
    assert suspect_mask(both).iloc[-1] and not suspect_mask(runs).any()
    text = build_report(both, dataset_name="d", accuracy=False, predictions=False).section(
        "Executive summary").paragraphs[1]
    assert text.startswith(f"Highest measured output throughput: {honest:,.0f} tok/s")
    assert text.endswith("leaving out the 1 run(s) faster than the physical bound (suspect data).")
    plain = build_report(runs, dataset_name="d", accuracy=False, predictions=False).section(
        "Executive summary").paragraphs[1]
    assert plain.startswith(f"Highest measured output throughput: {honest:,.0f} tok/s") and "suspect" not in plain


def _imported(files: list[Path], tmp_path: Path, **meta: object) -> pd.DataFrame:
    from perfmodel.api import import_files, load_runs
    from perfmodel.importers.base import ImportMeta
    from perfmodel.store import Store

    store = Store(tmp_path)
    info, _ = import_files(files, meta=ImportMeta(**meta), store=store)
    return load_runs(info.id, store=store)


def test_an_overloaded_row_says_the_rate_was_not_delivered_not_the_bands_not_robust(formats_dir: Path,
                                                                                   tmp_path: Path) -> None:
    """inference-perf's vLLM sweep on one H100, its three undelivered stages alone (101-103 of 123-183 req/s
    completed): the report's status read "ok (not robust)" and its key explained that by the throughput band, and
    the at-offered-load cell read a load off a line from nothing to the saturated peak, which the summary omits."""
    files = sorted((formats_dir / "inference-perf").glob("*stage_[4-6]_lifecycle_metrics.json"))
    runs = _imported(files, tmp_path, hardware="h100", model="llama-3-8b", framework="vllm")
    plan = {"workload": {"request_rate_rps": 250, "input_len_tok": 204, "output_len_tok": 62}}
    rep = build_report(runs, dataset_name="d", plan_inputs=plan, accuracy=False, predictions=False)
    cand = rep.section("Candidates")
    row = cand.tables[0][1].iloc[0]
    assert row["status"] == "ok (overloaded: rate not delivered)"
    assert row["at offered load"] == "n/a (overloaded)"
    assert "Overloaded: planned at a request rate the server did not deliver" in cand.paragraphs[0]
    assert "Overloaded: the server did not deliver" in rep.section("Executive summary").paragraphs[0]


def test_the_report_says_latency_ends_from_repeats_and_names_the_cheaper_fragile_batch(tmp_path: Path) -> None:
    """The H200 sample at 512/512 against a mean e2e of 17 s: batch 16 (17 H200s) is planned because one of batch
    64's three runs took 19.5 s; the report's key had explained robustness by the throughput band only, and said
    nothing of batch 64's 5 H200s."""
    path = Path(__file__).resolve().parents[1] / "sample_runs" / "perfmodel-large-llama_h200_local-sweep-out512.csv"
    runs = _imported([path], tmp_path)
    plan = {"workload": {"request_rate_rps": 20, "input_len_tok": 512, "output_len_tok": 512},
            "slo": {"e2e_s": 17, "percentile": "mean"}}
    rep = build_report(runs, dataset_name="d", plan_inputs=plan, accuracy=False, predictions=False)
    cand = rep.section("Candidates")
    row = cand.tables[0][1].iloc[0]
    assert (row["batch"], row["status"]) == ("16", "ok")
    assert "slowest of the runs at the planned batch where several runs measured it (repeats)" in cand.paragraphs[0]
    summary = rep.section("Executive summary").paragraphs[0]
    assert ("Cheaper but not robust: batch 64 would need 5 x h200 (12 fewer), but 1 of its 3 runs measured a mean "
            "e2e of 19.5 s against the 17 s target.") in summary
    notes = dict(zip(cand.tables[-1][1]["note"], cand.tables[-1][1]["text"], strict=True))
    assert notes[row["latency basis"]] == ("e2e: measured, ttft: measured, tpot: measured; ends from the repeats "
                                           "(slowest and fastest run at this batch)")
    assert notes[row["note"]].startswith("batch 64 would need 5 devices, not 17, but is not robust")


def test_a_candidate_tied_on_cost_says_why_it_comes_second_in_the_planners_words() -> None:
    from perfmodel.report.build import _tie_words

    top = {"status": "ok", "robust": True, "overloaded": False, "latency_band": "repeats"}
    assert _tie_words(top, {**top, "robust": False, "overloaded": True}) == \
        "but at a request rate the server did not deliver (overloaded)"
    assert _tie_words(top, {**top, "robust": False}) == "but not robust (the slowest of its repeats misses the SLOs)"
    assert _tie_words(top, {**top, "robust": False, "latency_band": "throughput band"}) == \
        "but not robust (the SLOs are missed at the pessimistic end of its band)"
    assert _tie_words(top, {**top, "status": "optimistic_only", "robust": False}) == \
        "but only for the fastest of its repeats"
