"""Shared widgets: components that draw and return what the user chose.

They never call the store themselves except through :mod:`perfmodel.ui.cached`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from ..errors import PerfmodelError
from ..plots import axis_title
from ..schema import ARRIVALS
from . import cached, tables
from . import state as K
from .forms import AS_IN_FILE, AUTO_FORMAT, COLUMN_MAP_LABEL, LOAD_KINDS, UploadForm
from .samples import sample_notice_text

__all__ = ["show_error", "upload_form", "upload_files_key", "upload_field_keys", "reset_upload_form", "issues_table", "sample_notice", "keep_valid", "labelled_columns",
           "DTYPE_CHOICES"]

DTYPE_CHOICES = ("bf16", "fp16", "fp32", "fp8", "int8", "int4")
"""Common dtypes offered in the form (any other can be typed)."""


def show_error(exc: PerfmodelError, *, what: str = "", words: Callable[[str], str] | None = None) -> None:
    """Show a user error as one ``st.error`` paragraph (no traceback).

    Parameters
    ----------
    exc
        The error.
    what
        What was being done, e.g. ``"Import failed"``.
    words
        Rewrites the message for the page (e.g. :func:`perfmodel.ui.forms.in_form_words`).
    """
    text = str(exc) if words is None else words(str(exc))
    head, _, rest = text.partition("\n")
    body = f"**{what}:** {head}" if what else head
    if rest:
        body += "\n\n" + rest.replace("\n  - ", "\n- ").lstrip()
    st.error(body, icon=":material/error:")


def labelled_columns(columns: Sequence[str], **config: Any) -> dict[str, Any]:
    """``st.dataframe``'s ``column_config``: every column headed by its human label with its unit
    (:func:`perfmodel.plots.axis_title`: ``output throughput (tok/s)``, not ``output_throughput_tok_s``).

    Parameters
    ----------
    columns
        The table's columns.
    **config
        Column -> ``st.column_config`` column (a format, a help text); one without a label gets the
        column's human label.

    Returns
    -------
    dict
        Column -> column configuration (columns whose label is their name are left out).
    """
    out: dict[str, Any] = {c: axis_title(c) for c in columns if axis_title(c) != c}
    for c, col in config.items():
        out[c] = {**col, "label": col.get("label") or axis_title(c)} if isinstance(col, dict) else col
    return out


def keep_valid(key: str, options: Sequence[Any]) -> None:
    """Drop values no longer among ``options`` from a multiselect's state (before drawing it).

    Parameters
    ----------
    key
        The widget key.
    options
        The options the widget is about to get.
    """
    if key in st.session_state:
        allowed = set(options)
        cur = st.session_state[key]
        if isinstance(cur, list) and any(v not in allowed for v in cur):
            # written only when something goes: a write on every run marks the value as set through the
            # Session State API, and Streamlit then warns about the widget's default on every run
            st.session_state[key] = [v for v in cur if v in allowed]


def _fresh(key: str) -> str:
    """``key`` for this session's n-th upload form: ``key`` itself for the first, ``key.n`` after n imports."""
    n = int(st.session_state.get(K.UPLOAD_COUNT, 0))
    return key if n == 0 else f"{key}.{n}"


def upload_files_key() -> str:
    """The file uploader's key: a new one after each import, so that the next upload starts empty (Streamlit
    cannot clear an uploader; it kept the last import's files, which the next Import stored again)."""
    return _fresh(K.UPLOAD_FILES)


def upload_field_keys() -> dict[str, str]:
    """The form fields' keys (:data:`~perfmodel.ui.state.FORM_FIELD` renewed after each import like the
    uploader's): a widget's value lives in the browser too, which sends it back on the next run, so removing it
    from the session state did not clear it, and the next file took this one's hardware and model."""
    return {name: _fresh(key) for name, key in K.FORM_FIELD.items()}


def reset_upload_form() -> None:
    """After an import: an empty uploader and every form field back to "as in file" (new keys), so that the next
    file does not take this one's hardware or model (it stored an MI300X file as GH200)."""
    old = upload_field_keys()
    st.session_state[K.UPLOAD_COUNT] = int(st.session_state.get(K.UPLOAD_COUNT, 0)) + 1
    for key in old.values():
        st.session_state.pop(key, None)


def upload_form(home: str) -> tuple[bool, list[tuple[str, bytes]], UploadForm]:
    """Draw the upload form: files, format, metadata, dataset name, Import button.

    Parameters
    ----------
    home
        The data directory (for the catalog choices).

    Returns
    -------
    (submitted, files, form)
        Whether Import was pressed on this run, the ``(name, bytes)`` of the
        chosen files, and the form values.
    """
    formats = cached.format_choices()
    hardware = cached.hardware_choices(home)
    models = cached.model_choices(home)
    f = upload_field_keys()
    with st.form(K.UPLOAD_FORM, border=True):
        uploaded = st.file_uploader(
            "Benchmark result files", accept_multiple_files=True, key=upload_files_key(),
            help="CSV, JSON, JSONL, YAML or text reports of benchmark clients (vLLM, SGLang, GuideLLM, "
                 "genai-perf/AIPerf, llmperf, TensorRT-LLM, LLM-Inference-Bench, ...). All files of one "
                 "upload become one dataset.")
        c1, c2, c3 = st.columns(3)
        values: dict[str, Any] = {}
        values["format"] = c1.selectbox(
            "Format", [AUTO_FORMAT, *formats], key=f["format"],
            format_func=lambda v: "auto-detect from content" if v == AUTO_FORMAT else f"{formats[v]} ({v})")
        # name and catalog key, so that typing either finds it (the key, "h100-sxm", had found nothing)
        values["hardware"] = c2.selectbox(
            "Hardware", [AS_IN_FILE, *hardware], key=f["hardware"],
            format_func=lambda v: v if v == AS_IN_FILE else f"{hardware.get(v, v)} ({v})")
        values["model"] = c3.selectbox(
            "Model", [AS_IN_FILE, *models], key=f["model"],
            format_func=lambda v: v if v == AS_IN_FILE else f"{models.get(v, v)} ({v})")
        c1, c2, c3, c4 = st.columns(4)
        values["framework"] = c1.text_input("Framework", key=f["framework"], placeholder=AS_IN_FILE)
        values["framework_version"] = c2.text_input("Framework version", key=f["framework_version"],
                                                    placeholder=AS_IN_FILE)
        values["weight_dtype"] = c3.selectbox("Weight dtype", [AS_IN_FILE, *DTYPE_CHOICES],
                                              key=f["weight_dtype"], accept_new_options=True)
        values["kv_cache_dtype"] = c4.selectbox("KV-cache dtype", [AS_IN_FILE, *DTYPE_CHOICES],
                                                key=f["kv_cache_dtype"], accept_new_options=True)
        c1, c2, c3, c4 = st.columns(4)
        for col, field, label in ((c1, "device_count", "Devices"), (c2, "tp_size", "Tensor parallel"),
                                  (c3, "pp_size", "Pipeline parallel")):
            values[field] = col.number_input(label, min_value=1, value=None, step=1, key=f[field],
                                             placeholder=AS_IN_FILE)
        values["quantization"] = c4.text_input("Quantization", key=f["quantization"], placeholder=AS_IN_FILE)
        with st.expander("What the file does not record (lengths, load, a generic CSV's columns)"):
            c1, c2, c3, c4, c5 = st.columns(5)
            for col, field, label in ((c1, "input_len_tok", "Input tokens"), (c2, "output_len_tok", "Output tokens"),
                                      (c3, "batch_size", "Batch size / concurrency")):
                values[field] = col.number_input(label, min_value=0.0 if field == "input_len_tok" else 1.0,
                                                 value=None, step=1.0, format="%g", key=f[field],
                                                 placeholder=AS_IN_FILE)
            values["load_kind"] = c4.selectbox(
                "Load kind", [AS_IN_FILE, *LOAD_KINDS], key=f["load_kind"],
                help="static_batch: a batch of this size at once; concurrency: this many requests kept in "
                     "flight; request_rate: requests per second; offline: all prompts at once.")
            values["latency_unit"] = c5.selectbox("Latency unit", [AS_IN_FILE, "s", "ms"], key=f["latency_unit"],
                                                  help="The unit of a generic CSV's latency columns.")
            values["arrival"] = c4.selectbox(
                "Arrival (request-rate runs)", [AS_IN_FILE, *ARRIVALS], key=f["arrival"],
                help="How a rate sweep's requests arrived, where the file does not say (inference-perf, SGLang): "
                     "constant spacing, Poisson, gamma (vLLM's burstiness) or a replayed trace.")
            values["burstiness"] = c5.number_input(
                "Burstiness", min_value=0.0, value=None, step=0.1, format="%g", key=f["burstiness"],
                placeholder=AS_IN_FILE,
                help="With Arrival gamma: the shape of its gaps, as vLLM's --burstiness (> 0; below 1 burstier "
                     "than Poisson, above 1 more even; 1 is Arrival poisson).")
            values["column_map"] = st.text_area(
                COLUMN_MAP_LABEL, key=f["column_map"], height=68,
                placeholder="batch_size=concurrency, output_throughput_tok_s=tps (canonical=the file's column)",
                help="For a CSV of your own (format: generic CSV): which of its columns holds each canonical "
                     "one, as `perfmodel import --map` takes them.")
        values["name"] = st.text_input("Dataset name", key=f["name"], placeholder="from the file names")
        submitted = st.form_submit_button("Import", type="primary", icon=":material/upload:",
                                          key=K.UPLOAD_SUBMIT)
    files = [(u.name, u.getvalue()) for u in (uploaded or [])]
    return bool(submitted), files, UploadForm.from_values(values)


def issues_table(issues: pd.DataFrame, *, key: str) -> None:
    """Draw row-level import issues with a filter by severity.

    Parameters
    ----------
    issues
        Columns file, row, column, message, severity.
    key
        Widget key of the severity filter.
    """
    counts = tables.severity_counts(issues)
    if not len(issues):
        st.caption("No import issues.")
        return
    if key not in st.session_state:  # set here, not as default=: the router keeps widget values across pages
        st.session_state[key] = [s for s in tables.SEVERITIES if counts[s]]
    chosen = st.multiselect("Severity", tables.SEVERITIES, key=key, placeholder="all",
                            format_func=lambda s: f"{s} ({counts[s]})",
                            help="error: the row was dropped; warning: the row was kept but something was "
                                 "assumed or looks wrong; info: a note. Empty shows all.")
    shown = tables.issues_frame(issues, chosen)
    st.dataframe(shown, hide_index=True, width="stretch", placeholder="—",  # a file-level issue has no row
                 column_config={"message": st.column_config.TextColumn(width="large")})


def sample_notice() -> None:
    """Say that the sample data was imported into an empty store (or why it could not be)."""
    names = st.session_state.get(K.SAMPLE_NOTICE)
    if names:
        # the button under the notice, not in a narrow column beside it, where it read "G..." at 1,200 px
        st.info(sample_notice_text(names), icon=":material/science:")
        if st.button("Got it", key="ui.sample_notice.dismiss", help="Hide this notice for this session",
                     type="tertiary", icon=":material/check:"):
            st.session_state.pop(K.SAMPLE_NOTICE, None)
            st.rerun()
    error = st.session_state.get(K.SAMPLE_ERROR)
    if error:
        st.error(f"**The sample data could not be imported:** {error}", icon=":material/error:")
