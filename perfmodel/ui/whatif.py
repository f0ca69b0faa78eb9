"""What-if page helpers: its state and URL keys, cached training/loading/prediction, suspect-point views.

Every input of the What-if page lives in the URL (``?dataset=...&hardware=...&input_len=...``),
with the names the Attribution page reads (:data:`perfmodel.ui.explain.QP_WHATIF`), so a copied
link reopens the same curve; so does a measurement setting the dataset varies (``num_threads=2``,
``n_batch=16``, :func:`settle_settings`). Trained models are written as JSON under
``$PERFMODEL_HOME/models/whatif/`` (keyed by dataset, its size and the training options) and
loaded through ``st.cache_resource``; results live in the cache, selections in session state.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from .. import physics
from .. import whatif as W
from ..curve_tables import in_seconds
from ..curves import VARYING_BY
from ..errors import PerfmodelError
from ..models.base import ProgressCallback
from ..plots import add_suspect_markers, compact_number, compact_seconds, whatif_figure
from . import cached
from .widgets import show_error

__all__ = [
    "confidence_help",
    "roofline_tile",
    "ROOFLINE_HELP",
    "P",
    "KEYS",
    "QP",
    "PREDICTOR_CHOICES",
    "DEFAULT_PREDICTOR",
    "restore_from_link",
    "apply_defaults",
    "settle_link",
    "settle_framework",
    "UNSET",
    "settle_settings",
    "choose_settings",
    "setting_choices",
    "setting_label",
    "setting_options",
    "setting_text",
    "setting_help",
    "setting_point",
    "settings_words",
    "widen_range_to_link_batch",
    "choice_label",
    "write_link",
    "inputs",
    "place_batch",
    "context_warning",
    "latency_conflict",
    "no_ttft_text",
    "TABLE_ORDER",
    "table_config",
    "display_table",
    "shown_name",
    "options_json",
    "model_dir",
    "DEFAULT_OPTIONS",
    "default_model_path",
    "trained_when",
    "training_took",
    "show_just_trained",
    "combination_note",
    "train",
    "train_with_status",
    "load_model",
    "result",
    "figure",
    "result_csv",
    "CSV_SIGNIFICANT",
    "suspect_runs",
    "fast_ttft_runs",
    "curves_with_suspects",
]

P = "whatif."
"""Widget key prefix of the What-if page."""
KEYS: Mapping[str, str] = {name: P + name for name in (
    "dataset", "hardware", "model", "framework", "input_len_tok", "output_len_tok", "device_count",
    "batch_min", "batch_max", "batch_size", "level", "predictor", "keep_suspect", "log_x", *VARYING_BY)}
"""Input name -> widget key (a setting's input is named as its column, ``fw_num_threads``)."""
QP: Mapping[str, str] = {
    "hardware": "hardware", "model": "model", "framework": "framework", "input_len_tok": "input_len",
    "output_len_tok": "output_len", "device_count": "device_count", "batch_size": "batch",
    "batch_min": "batch_min", "batch_max": "batch_max", "level": "level", "predictor": "predictor",
    "keep_suspect": "keep_suspect", "log_x": "log_x",
    **{name: name.removeprefix("fw_") for name in VARYING_BY},
}
"""Input name -> URL query parameter (the first seven are the Attribution page's names; a setting's is its
column without ``fw_``: ``num_threads``, ``n_batch``)."""
UNSET = "unset"
"""A setting's value, in its widget and the URL, for the runs that do not record it (None in the core)."""
PREDICTOR_CHOICES = ("roofline-gbm", "ala", "xgboost", "random-forest", "linear")
DEFAULT_PREDICTOR = "roofline-gbm"
BANDED_PREDICTORS = ("roofline-gbm",)
"""The predictors that give a band (the published hybrid and baselines give none): the band level applies to
them only."""
MODEL_FORMAT = 3
"""Part of a saved What-if model's directory name: raised when the inputs a saved model reads change meaning, so
that a model saved before is trained again rather than fed them (2: the memory read in binary GB; 3: a model
trained without suspect points caps its answers at the physical bound, which those saved with keep_suspect set
to skip a second filter did not)."""
_NUMBERS = ("input_len_tok", "output_len_tok", "device_count", "batch_min", "batch_max", "batch_size")
_LIMITS = {"input_len_tok": (0, W.MAX_LENGTH_TOK), "output_len_tok": (1, W.MAX_LENGTH_TOK),
           "device_count": (1, W.MAX_DEVICES), "batch_min": (1, W.MAX_BATCH), "batch_max": (1, W.MAX_BATCH),
           "batch_size": (1, math.inf)}
"""Input name -> (smallest, largest) value a link may set (the number inputs' bounds)."""
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
_LINK_BAD = P + "link_bad"  # name -> (raw, why) of link values that could not be used, until the page says so
_CHECKED = P + "link_checked"
_DEFAULTS_FOR = P + "defaults_for"
_LINK_BATCH = P + "link_batch"  # the batch a link asked for, until the page has placed it
_LINK_RANGE = P + "link_range"  # the link named batch_min or batch_max (its batch range is the user's)
_FIRST_DATASET = "\0first"  # _DEFAULTS_FOR of a link that names no dataset: the first one selected
_LINK_SETTINGS = P + "link_settings"  # setting -> the link's raw value, until settle_settings has judged it



def choice_label(key: str, names: dict[str, str]) -> str:
    """A hardware or model choice as the page lists it: the catalog's display name with its key
    (``NVIDIA H200 SXM 141GB · h200``), or the key alone where the catalog has no other name."""
    name = names.get(key, key)
    return key if name == key else f"{name} · {key}"

def _number(raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        return math.nan


def whole_devices() -> None:
    """The Devices box's ``on_change``: a typed fraction becomes the nearest whole count (at least 1); 1.5
    devices had been predicted as if they existed (4,399 tok/s against 3,489 on one H100)."""
    v = st.session_state.get(KEYS["device_count"])
    if isinstance(v, int | float) and math.isfinite(v):
        st.session_state[KEYS["device_count"]] = float(max(1, round(v)))


def _parse(name: str, raw: str) -> Any:
    """A link value as the widget's value; ValueError (saying what was expected) when it cannot be one."""
    if name in _NUMBERS:
        lo, hi = _LIMITS[name]
        v = _number(raw)
        whole = name == "device_count"
        if not (math.isfinite(v) and lo <= v <= hi) or (whole and v != round(v)):
            raise ValueError(f"is not a {'whole ' if whole else ''}number from {lo:,.0f} to {hi:,.0f}"
                             if math.isfinite(hi) else f"is not a number of at least {lo:g}")
        return v
    if name == "level":
        if _number(raw) not in W.WHATIF_LEVELS:
            raise ValueError(f"is not one of {', '.join(f'{v:g}' for v in W.WHATIF_LEVELS)}")
        return _number(raw)
    if name == "predictor" and raw not in PREDICTOR_CHOICES:
        raise ValueError(f"is not one of {', '.join(PREDICTOR_CHOICES)}")
    if name in ("keep_suspect", "log_x"):
        if raw.lower() not in (*_TRUE, *_FALSE):
            raise ValueError("is not 1 or 0 (true or false)")
        return raw.lower() in _TRUE
    return raw  # a setting is judged by settle_settings, against the values of the chosen configuration


def restore_from_link() -> list[str]:
    """On the session's first run of the page, put the URL's inputs into the widgets' state.

    Returns
    -------
    list of str
        Empty: a value that cannot be used is remembered, and :func:`settle_link` names it with the value
        shown instead once the dataset's defaults are in.
    """
    if st.session_state.get(_CHECKED):
        return []
    st.session_state[_CHECKED] = True
    bad: dict[str, tuple[str, str]] = {}
    found = False
    for name, qp in QP.items():
        raw = st.query_params.get(qp)
        if raw is None or raw == "":
            continue
        try:
            st.session_state[KEYS[name]] = _parse(name, str(raw))
            found = True
            if name == "batch_size":
                st.session_state[_LINK_BATCH] = st.session_state[KEYS[name]]
            if name in ("batch_min", "batch_max"):
                st.session_state[_LINK_RANGE] = True
            if name in VARYING_BY:
                st.session_state.setdefault(_LINK_SETTINGS, {})[name] = str(raw)
        except ValueError as exc:
            bad[name] = (str(raw), str(exc))
    if bad:
        st.session_state[_LINK_BAD] = bad
    if found:
        # The link's inputs win over the dataset's defaults for the dataset it names (for the first dataset
        # selected when it names none).
        st.session_state[_DEFAULTS_FOR] = st.session_state.get("ui.dataset") or _FIRST_DATASET
    return []


@st.cache_data(show_spinner=False, max_entries=32)
def _defaults(home: str, dataset_id: str, stamp: int) -> dict[str, Any]:
    return W.default_point(cached.dataset_runs(home, dataset_id, stamp))


def apply_defaults(home: str, dataset_id: str, stamp: int) -> dict[str, Any]:
    """Fill the inputs from the dataset when it changes (or on first visit); keep them otherwise.

    Parameters
    ----------
    home, dataset_id, stamp
        The selected dataset.

    Returns
    -------
    dict
        The dataset's defaults (:func:`perfmodel.whatif.default_point`).
    """
    d = _defaults(home, dataset_id, stamp)
    fresh = st.session_state.get(_DEFAULTS_FOR) not in (dataset_id, _FIRST_DATASET)
    values = {**d, "batch_size": d["batch_max"], "level": 0.9, "predictor": DEFAULT_PREDICTOR,
              "keep_suspect": False, "log_x": True}
    if fresh and _DEFAULTS_FOR in st.session_state:
        # Another dataset chosen: what is not the data's stays (band level, predictor, suspect points, axis), and
        # so does the point where the new dataset measured it. Switching away and back had reset everything,
        # the point to the dataset's first configuration.
        kept = list(_VIEW_SETTINGS)
        if _measured_in(cached.dataset_runs(home, dataset_id, stamp)):
            kept += [*_POINT, "batch_min", "batch_max", "batch_size", *VARYING_BY]
        values.update({n: st.session_state[KEYS[n]] for n in kept if KEYS[n] in st.session_state})
    fallback = {"input_len_tok": 512.0, "output_len_tok": 128.0, "device_count": 1.0}
    for name, key in KEYS.items():
        if name == "dataset":
            continue
        v = values.get(name)
        if v is None and name in VARYING_BY:
            pass  # None: settle_settings puts the configuration's default (unset included) or none
        elif v is None:
            v = fallback.get(name, "")
        if fresh or key not in st.session_state:
            st.session_state[key] = v
    st.session_state[_DEFAULTS_FOR] = dataset_id
    return d


_VIEW_SETTINGS = ("level", "predictor", "keep_suspect", "log_x")
_POINT = ("hardware", "model", "framework", "device_count", "input_len_tok", "output_len_tok")


def _measured_in(runs: pd.DataFrame) -> bool:
    """Whether ``runs`` measured the configuration the page shows (hardware, model, framework, devices, lengths)."""
    if runs.empty or any(c not in runs.columns or KEYS[c] not in st.session_state for c in _POINT):
        return False
    hit = np.ones(len(runs), dtype=bool)
    for c in _POINT:
        v, col = st.session_state[KEYS[c]], runs[c]
        if c in ("device_count", "input_len_tok", "output_len_tok"):
            if not isinstance(v, int | float):
                return False
            hit &= pd.to_numeric(col, errors="coerce").to_numpy(dtype=float) == float(v)
        else:
            hit &= (col.astype(str) == str(v)).to_numpy()
    return bool(hit.any())


def _catalog_key(name: str, value: str) -> str | None:
    from .. import catalog

    try:
        return (catalog.resolve_hardware if name == "hardware" else catalog.resolve_model)(value).key
    except PerfmodelError:
        return None


def _shown(name: str, v: Any) -> str:
    if name == "keep_suspect":
        return "1 (suspect points kept)" if v else "0 (suspect points left out)"
    if name == "log_x":
        return "1 (log batch axis)" if v else "0 (linear batch axis)"
    return f"{float(v):g}" if isinstance(v, (int, float)) else str(v)


def widen_range_to_link_batch() -> None:
    """A link that names a batch but no batch range: widen the dataset's default range to take it in.

    ``/whatif?...&batch=64`` on a dataset whose default range is 1-16 showed batch 16 with a warning that
    64 lay outside the range, a range the link never asked for. Where the link names ``batch_min`` or
    ``batch_max`` that range is the user's and :func:`place_batch` keeps it (and says so). Run after
    :func:`apply_defaults`, before the widgets are drawn.
    """
    b = st.session_state.get(_LINK_BATCH)
    if b is None or st.session_state.get(_LINK_RANGE):
        return
    lo, hi = st.session_state.get(KEYS["batch_min"]), st.session_state.get(KEYS["batch_max"])
    if isinstance(lo, (int, float)) and b < lo:
        st.session_state[KEYS["batch_min"]] = float(b)
    if isinstance(hi, (int, float)) and b > hi:
        st.session_state[KEYS["batch_max"]] = float(b)


def settle_framework(options: Sequence[str]) -> None:
    """Write the framework as the dataset does: a link's or a typed ``vLLM`` had stayed as written, so the
    dataset's ``vllm`` runs were not its own and the answer was out of domain (band 1,399 - 6,618 against
    3,240 - 3,757). An unknown framework stays, canonical (frameworks are open-ended). Run before the box
    is drawn."""
    from ..catalog import canonical_framework

    v = st.session_state.get(KEYS["framework"])
    if v in (None, "") or v in options:
        return
    by_case = {str(o).lower(): o for o in options}
    canon = canonical_framework(str(v))
    st.session_state[KEYS["framework"]] = by_case.get(str(v).strip().lower()) or by_case.get(canon, canon)


def settle_link(defaults: Mapping[str, Any], options: Mapping[str, Sequence[str]]) -> list[str]:
    """Put hardware and model on one of their options, and name every link value the page cannot use.

    A catalog display name or alias (``Llama-2-13B``, ``H200``) becomes its catalog key; any other
    value not among the options falls back to the dataset's default point (the first option where that
    is not one either). Run after :func:`apply_defaults`, before the widgets are drawn.

    Parameters
    ----------
    defaults
        The dataset's defaults (:func:`apply_defaults`).
    options
        ``hardware`` and ``model`` -> the options their selectboxes get.

    Returns
    -------
    list of str
        One warning per link value not used, naming the parameter, the value and what is shown instead.
    """
    messages = []
    for name, opts in options.items():
        key = KEYS[name]
        v = st.session_state.get(key)
        if v in opts or not opts:
            continue
        if v not in (None, ""):
            by_case = {str(o).lower(): o for o in opts}
            resolved = by_case.get(str(v).lower()) or _catalog_key(name, str(v))
            if resolved in opts:
                st.session_state[key] = resolved
                continue
        d = defaults.get(name)
        st.session_state[key] = shown = d if d in opts else opts[0]
        if v not in (None, ""):
            messages.append(f"{QP[name]}={v!r} is neither in the {name} catalog nor in this dataset: "
                            f"showing {shown}" + (", the dataset's default" if shown == d else ""))
    for name, (raw, why) in st.session_state.pop(_LINK_BAD, {}).items():
        messages.append(f"{QP[name]}={raw!r} {why}: showing {_shown(name, st.session_state.get(KEYS[name]))}")
    return messages


@st.cache_data(show_spinner=False, max_entries=64)
def setting_choices(home: str, dataset_id: str, stamp: int, point: str) -> dict[str, W.SettingChoice]:
    """:func:`perfmodel.whatif.setting_choices` on the dataset, cached; ``point`` as sorted JSON."""
    return W.setting_choices(cached.dataset_runs(home, dataset_id, stamp), json.loads(point))


def _widget_value(v: float | None) -> float | str:
    """A core setting value as the widget holds it (None, unset, is :data:`UNSET`)."""
    return UNSET if v is None else float(v)


def _as_setting(v: Any) -> float | str | None:
    """A setting held in state (a widget's float, :data:`UNSET`, or a link's raw text) as the widget's
    value; None where it is neither a number nor unset."""
    if isinstance(v, str):
        if v.strip().lower() == UNSET:
            return UNSET
        v = _number(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def setting_options(choice: W.SettingChoice) -> list[float | str]:
    """A setting's selectbox options: its values, and :data:`UNSET` for the runs that do not record it."""
    return [_widget_value(v) for v in choice.options]


def setting_label(name: str) -> str:
    """A setting's widget label from :data:`perfmodel.features.SETTING_DOCS` (``Threads``, ``llama.cpp n_batch``)."""
    from ..features import SETTING_DOCS, feature_label

    if name not in SETTING_DOCS:
        return feature_label(name)
    label = SETTING_DOCS[name].label.removeprefix("framework setting: ")
    # A program's name (llama.cpp) keeps its case; a plain word starts the label in capitals like the others.
    return label[:1].upper() + label[1:] if label.split()[0].isalpha() else label


def setting_text(v: float | str) -> str:
    """A setting's option as the selectbox shows it."""
    return "unset (not recorded)" if v == UNSET else f"{float(v):g}"


def setting_help(choice: W.SettingChoice) -> str:
    """A setting widget's help: what the setting is, and where its values come from."""
    from ..features import SETTING_DOCS

    doc = SETTING_DOCS.get(choice.name)
    what = f"{doc.formula[:1].upper()}{doc.formula[1:]}" + (f" ({doc.unit})" if doc.unit else "") + ". " \
        if doc is not None else ""
    where = ("The values measured for this hardware, model and framework" if choice.measured
             else "This hardware, model and framework were never measured together: the values measured with "
                  "this framework elsewhere (the whole dataset's where it was never run)")
    unset = "; unset: the runs that do not record it" if None in choice.options else ""
    return (f"{what}{where}{unset}. The curve is predicted at the value chosen, and the measured points shown are "
            "those at it.")


def settle_settings(home: str, dataset_id: str, stamp: int) -> tuple[dict[str, W.SettingChoice], list[str]]:
    """Put each measurement setting the dataset varies on one of the chosen configuration's values.

    The options are :func:`perfmodel.whatif.setting_choices` for the hardware, model and framework in state; a
    value that is not one of them (the configuration changed, or a link asked for it) becomes the
    configuration's default, and a setting the configuration's runs do not record becomes None (no widget,
    nothing in the query). Run after :func:`settle_link`, before the widgets are drawn.

    Parameters
    ----------
    home, dataset_id, stamp
        The selected dataset.

    Returns
    -------
    (dict, list of str)
        The settings to offer (setting -> :class:`perfmodel.whatif.SettingChoice`, the page draws one selectbox
        each), and one warning per link value not used, naming the parameter, the value and what is shown
        instead.
    """
    point = {c: st.session_state.get(KEYS[c]) for c in W.POINT_COLUMNS}
    choices = setting_choices(home, dataset_id, stamp, json.dumps(point, sort_keys=True, default=str))
    link = st.session_state.pop(_LINK_SETTINGS, {})
    config = " · ".join(str(point[c]) for c in ("hardware", "model", "framework"))
    values, messages = choose_settings(choices, config, {n: st.session_state.get(KEYS[n]) for n in VARYING_BY},
                                       link, leaves="the what-if leaves it out")
    for name, v in values.items():
        st.session_state[KEYS[name]] = v
    return choices, messages


def choose_settings(choices: Mapping[str, W.SettingChoice], config: str, current: Mapping[str, Any],
                    asked: Mapping[str, Any], *, leaves: str) -> tuple[dict[str, float | str | None], list[str]]:
    """Each setting's widget value on one of its configuration's options, for the What-if and Attribution pages.

    Parameters
    ----------
    choices
        :func:`perfmodel.whatif.setting_choices` for the configuration (a setting absent: not offered).
    config
        The configuration in words, for the warnings.
    current
        Setting -> the value in state.
    asked
        Setting -> the value a link asked for, as written (absent: none), which wins over ``current``.
    leaves
        What happens to a setting the configuration's runs do not record (``the what-if leaves it out``).

    Returns
    -------
    (dict, list of str)
        Setting -> the widget's value (None: not offered); one warning per link value not used, naming the
        parameter, the value and what is shown instead. A value in state that is not an option moves to the
        configuration's default quietly (the configuration changed under it).
    """
    values: dict[str, float | str | None] = {}
    messages = []
    for name in VARYING_BY:
        raw, choice = asked.get(name), choices.get(name)
        if choice is None:
            values[name] = None
            if raw is not None:
                messages.append(f"{QP[name]}={raw!r} does not apply: the runs of {config} do not record "
                                f"{_in_words(name)}, so {leaves}")
            continue
        options = setting_options(choice)
        v = _as_setting(raw if raw is not None else current.get(name))
        if v is not None and v in options:
            values[name] = v
            continue
        values[name] = shown = _widget_value(choice.default)
        if raw is None:
            continue
        listed = ", ".join(setting_text(o) for o in options)
        whose = "the configuration's default" if choice.measured else "the most frequent elsewhere"
        why = (f"is not a number or {UNSET}" if _as_setting(raw) is None
               else f"was not measured for {config} (measured: {listed})" if choice.measured
               else f"is not among the values measured with {config.split(' · ')[-1]} elsewhere ({listed})")
        messages.append(f"{QP[name]}={raw!r} {why}: showing {setting_text(shown)}, {whose}")
    return values, messages


def setting_point(values: Mapping[str, Any], choices: Mapping[str, W.SettingChoice]) -> dict[str, float | None]:
    """The settings a what-if point carries: each offered one's value (None for :data:`UNSET`).

    Parameters
    ----------
    values
        :func:`inputs`.
    choices
        :func:`settle_settings`'s settings.

    Returns
    -------
    dict
        Setting column -> value, for :func:`perfmodel.whatif.whatif`'s point.
    """
    out: dict[str, float | None] = {}
    for name in choices:
        v = _as_setting(values.get(name))
        out[name] = None if v in (None, UNSET) else float(v)
    return out


def settings_words(point: Mapping[str, Any]) -> str:
    """The settings of a what-if point in words (``threads 2, llama.cpp n_batch 16``); empty without any."""
    return ", ".join(f"{_in_words(c)} {setting_text(_widget_value(point[c]))}" for c in VARYING_BY if c in point)


def _in_words(name: str) -> str:
    """A setting's label inside a sentence (``threads``)."""
    label = setting_label(name)
    return label[:1].lower() + label[1:]


def inputs() -> dict[str, Any]:
    """The page's current inputs (name -> value) from the widgets' state."""
    return {name: st.session_state.get(key) for name, key in KEYS.items() if name != "dataset"}


def place_batch(batches: list[float], batch: float | None) -> tuple[list[float], float, str | None]:
    """Where the batch to show and explain goes on the curve's batch grid.

    A batch inside the range that is not one of the grid's powers of two (a link's ``batch=100``) joins
    the grid, so the link shows what it asked for; one outside the range moves to the nearer end (in
    doublings), with a message when a link asked for it (a widget change of the range moves it quietly).

    Parameters
    ----------
    batches
        The grid (:func:`perfmodel.whatif.batch_grid`), sorted.
    batch
        The batch input (None before any).

    Returns
    -------
    (batches, batch, message)
        The grid, the batch on it and the warning to show (None when there is none).
    """
    from_link = st.session_state.pop(_LINK_BATCH, None)
    if batch is None or not (isinstance(batch, (int, float)) and math.isfinite(batch) and batch > 0):
        return batches, batches[-1], None
    b = float(batch)
    if b in batches:
        return batches, b, None
    if batches[0] <= b <= batches[-1]:
        return sorted([*batches, b]), b, None
    nearest = min(batches, key=lambda x: abs(math.log2(x / b)))
    msg = None
    if from_link is not None and float(from_link) == b:
        msg = (f"{QP['batch_size']}={b:g} lies outside the batch range {batches[0]:g}-{batches[-1]:g} "
               f"({QP['batch_min']}, {QP['batch_max']}): showing batch {nearest:g}")
    return batches, nearest, msg


def context_warning(values: Mapping[str, Any]) -> str | None:
    """The warning to show when input + output length exceed the model's context length in the catalog.

    Parameters
    ----------
    values
        :func:`inputs`.

    Returns
    -------
    str or None
        None when they fit, or the catalog does not know the model or its context length.
    """
    from .. import catalog

    try:
        limit = catalog.resolve_model(str(values.get("model"))).max_context
        n_in, n_out = float(values["input_len_tok"]), float(values["output_len_tok"])
    except (PerfmodelError, KeyError, TypeError, ValueError):
        return None
    if limit is None or not n_in + n_out > limit:
        return None
    return (f"input length {n_in:,.0f} + output length {n_out:,.0f} = {n_in + n_out:,.0f} tokens exceed the "
            f"context length of {values['model']}, {limit:,} tokens ({QP['input_len_tok']}, {QP['output_len_tok']}; "
            "max_context in the model catalog): the model cannot serve such a request, so the prediction and its "
            "latencies describe no real run")


def latency_conflict(row: Mapping[str, Any], level: float) -> str | None:
    """The warning to show when the predicted TTFT exceeds the predicted end-to-end latency at one batch.

    The end-to-end latency follows from the predicted throughput (Little's law), the TTFT from a
    separate model, so they can disagree; the one with the wider band is the one to distrust.

    Parameters
    ----------
    row
        One row of a :class:`perfmodel.whatif.WhatIfResult` table.
    level
        The band level.

    Returns
    -------
    str or None
        None when they agree (or TTFT is not predicted).
    """
    ttft, e2e = float(row["pred_ttft_s"]), float(row["pred_e2e_latency_s"])
    if not (math.isfinite(ttft) and math.isfinite(e2e)) or ttft <= e2e:
        return None

    def span(lo: str, hi: str) -> float:
        a, b = float(row.get(lo, math.nan)), float(row.get(hi, math.nan))
        return b / a if a > 0 and math.isfinite(b) else math.nan

    thr, first = span("pred_lower", "pred_upper"), span("pred_ttft_lower_s", "pred_ttft_upper_s")
    def factor(x: float) -> str:
        return f"a factor {x:.3g}" if x < 100 else f"a factor {x:,.0f}" if x < 1e4 else "more than a factor 10,000"

    bands = (f" (the {level:.0%} band of the throughput spans {factor(thr)}, that of TTFT {factor(first)})"
             if math.isfinite(thr) and math.isfinite(first) else "")
    distrust = ("the TTFT" if first > thr else "the throughput, and the end-to-end latency derived from it")
    return (f"The predicted TTFT ({seconds(ttft)}) exceeds the predicted end-to-end latency ({seconds(e2e)}) at "
            f"batch {float(row['batch_size']):g}: a request cannot end before its first token, so the two "
            "estimates disagree. The end-to-end latency follows from the predicted throughput (Little's law: batch "
            f"x output tokens / throughput), the TTFT from a separate model. Distrust {distrust}{bands}.")


def no_ttft_text(res: W.WhatIfResult, row: Mapping[str, Any]) -> str | None:
    """What the TTFT and TPOT tiles mean when they read n/a: why, and what still bounds the two.

    Parameters
    ----------
    res
        The curve (its ``ttft_note``, :func:`perfmodel.whatif.ttft_reason`).
    row
        Its table's row at the batch the tiles show.

    Returns
    -------
    str or None
        None where the row has a predicted TTFT.
    """
    if math.isfinite(float(row["pred_ttft_s"])):
        return None
    why = res.ttft_note or "no TTFT is predicted at this batch"
    floor, e2e = float(row.get("ttft_floor_s", math.nan)), float(row["pred_e2e_latency_s"])
    after = float(res.point["output_len_tok"]) - 1
    holds = []
    if math.isfinite(floor) and floor > 0:
        holds.append(f"TTFT is at least {seconds(floor)} (the physical floor: the prompts' FLOPs at peak, or one "
                     "read of the weights)")
    if math.isfinite(e2e) and after >= 1:
        spent = e2e - floor if math.isfinite(floor) and 0 < floor < e2e else e2e
        holds.append(f"TPOT is at most {seconds(spent / after)} (the predicted end-to-end latency"
                     + (" less that floor" if spent < e2e else "") + f", over the {after:,.0f} tokens after the first)")
    text = f"TTFT and TPOT: n/a, as {why}."
    if holds:
        text += f" What holds without them at batch {float(row['batch_size']):g}: " + "; ".join(holds) + "."
    return text


def write_link(dataset_id: str | None, values: Mapping[str, Any]) -> None:
    """Put every input in the URL so that a copied link reopens the same what-if.

    Parameters
    ----------
    dataset_id
        The selected dataset.
    values
        :func:`inputs`.
    """
    wanted: dict[str, str] = {}
    if dataset_id:
        wanted["dataset"] = dataset_id
    for name, qp in QP.items():
        v = values.get(name)
        if v is None or v == "":
            continue
        if isinstance(v, bool):
            wanted[qp] = "1" if v else "0"
        elif isinstance(v, (int, float)):
            wanted[qp] = f"{float(v):g}"
        else:
            wanted[qp] = str(v)
    managed = {"dataset", *QP.values()}
    current = {k: st.query_params.get(k) for k in st.query_params.keys() if k in managed}
    if current == wanted:
        return
    for k in managed - wanted.keys():
        if k in st.query_params:
            del st.query_params[k]
    for k, v in wanted.items():
        st.query_params[k] = v


def options_json(predictor: str, keep_suspect: bool) -> str:
    """The canonical JSON of the training options (part of the cache key and the model's directory).

    Parameters
    ----------
    predictor
        Registry name.
    keep_suspect
        Keep points faster than the physical bound.

    Returns
    -------
    str
    """
    return json.dumps({"predictor": predictor, "keep_suspect": bool(keep_suspect)}, sort_keys=True)


DEFAULT_OPTIONS = options_json(DEFAULT_PREDICTOR, False)
"""The What-if page's default training options (its predictor, suspect points left out)."""


def model_dir(home: str, dataset_id: str, n_rows: int, options: str) -> Path:
    """Where the What-if model of a dataset (of ``n_rows`` runs) and options is saved.

    Parameters
    ----------
    home, dataset_id
        Data directory and dataset.
    n_rows
        Runs in the dataset (a grown dataset needs a new model).
    options
        :func:`options_json`.

    Returns
    -------
    pathlib.Path
    """
    digest = hashlib.sha256(f"{dataset_id}|{n_rows}|{options}|{MODEL_FORMAT}".encode()).hexdigest()[:12]
    return Path(home) / "models" / "whatif" / f"{dataset_id}-{digest}"


def combination_note(runs: pd.DataFrame, hardware: str, model: str, framework: str) -> str | None:
    """What the dataset never ran of the chosen hardware, model and framework together, in words (None when
    it ran them together): a prediction for such a combination transfers what was learnt elsewhere.

    Parameters
    ----------
    runs
        The dataset's runs.
    hardware, model, framework
        The What-if page's choices.

    Returns
    -------
    str or None
    """
    if not {"hardware", "model", "framework"} <= set(runs.columns) or not len(runs):
        return None
    hw, m, fw = (runs[c].astype("string") for c in ("hardware", "model", "framework"))
    if ((hw == hardware) & (m == model) & (fw == framework)).fillna(False).any():
        return None
    on_hw = sorted(set(fw[(hw == hardware).fillna(False)].dropna()))
    if on_hw and framework not in on_hw:
        return (f"{framework} never ran on {hardware} in this dataset (it ran {', '.join(on_hw)}): the prediction "
                f"transfers {framework}'s efficiency from other hardware, so expect a wider band.")
    with_m = sorted(set(fw[((hw == hardware) & (m == model)).fillna(False)].dropna()))
    if with_m:
        return (f"{model} on {hardware} ran with {', '.join(with_m)} only, not {framework}: the prediction "
                "transfers what the other models on this hardware showed.")
    return None


def trained_when(meta: Path) -> str:
    """When a saved model was trained, in words: ``"today at 14:05 UTC"`` or ``"on 2026-11-30 at 09:12 UTC"``.

    Parameters
    ----------
    meta
        The model's ``metadata.json``.

    Returns
    -------
    str
    """
    from datetime import UTC, datetime

    t = datetime.fromtimestamp(meta.stat().st_mtime, tz=UTC)
    day = "today" if t.date() == datetime.now(UTC).date() else f"on {t:%Y-%m-%d}"
    return f"{day} at {t:%H:%M} UTC"


def default_model_path(home: str, dataset_id: str, n_rows: int) -> Path:
    """Where the What-if page saves its default predictor for a dataset (:data:`DEFAULT_PREDICTOR`, suspect
    points left out: :data:`DEFAULT_OPTIONS`), the model the Attribution and Planner pages use too.

    Parameters
    ----------
    home, dataset_id
        Data directory and dataset.
    n_rows
        Runs in the dataset.

    Returns
    -------
    pathlib.Path
        A directory whose ``metadata.json`` exists once the model is trained (by any of those pages).
    """
    return model_dir(home, dataset_id, int(n_rows), DEFAULT_OPTIONS)


def train(home: str, dataset_id: str, stamp: int, options: str, path: Path, *,
          progress: ProgressCallback | None = None) -> None:
    """Train the What-if model and save it as JSON to ``path`` (behind the page's Train button).

    Parameters
    ----------
    home, dataset_id, stamp
        The dataset.
    options
        :func:`options_json`.
    path
        :func:`model_dir`.
    progress
        ``progress(stage, fraction)`` while training (see :func:`perfmodel.whatif.fit_whatif_model`);
        :func:`train_with_status` passes one that draws the stages.

    Raises
    ------
    PerfmodelError
        What :func:`perfmodel.whatif.fit_whatif_model` or ``save`` raises.
    """
    opts = json.loads(options)
    model, _ = W.fit_whatif_model(cached.dataset_runs(home, dataset_id, stamp), opts["predictor"],
                                  keep_suspect=opts["keep_suspect"], progress=progress)
    model.save(path)


def train_with_status(home: str, dataset_id: str, stamp: int, options: str, path: Path, label: str) -> bool:
    """:func:`train` inside an ``st.status`` box with a progress bar naming each stage of the fit.

    Parameters
    ----------
    home, dataset_id, stamp, options, path
        As :func:`train`.
    label
        What is trained on what (the box's title, e.g. ``Training roofline-gbm on All_results``).

    Returns
    -------
    bool
        True when the model was trained and saved; False when training failed (the error is shown in
        the box, which stays open).
    """
    with st.status(f"{label}...", expanded=True) as box:
        bar = st.progress(0.0, text="preparing the training rows")
        t0 = time.perf_counter()

        def progress(stage: str, fraction: float) -> None:
            bar.progress(min(max(fraction, 0.0), 1.0), text=f"{stage} ({time.perf_counter() - t0:.0f} s)")

        try:
            train(home, dataset_id, stamp, options, path, progress=progress)
        except PerfmodelError as exc:
            box.update(label=f"{label}: failed", state="error", expanded=True)
            show_error(exc, what="Training failed")
            return False
        took = time.perf_counter() - t0
        box.update(label=f"{label}: done in {took:.1f} s", state="complete", expanded=False)
    st.session_state[P + "trained_in"] = (str(path), took)
    st.session_state[P + "just_trained"] = f"{label}: done in {took:.1f} s"
    return True


def show_just_trained() -> None:
    """After the rerun that follows training (so that the button reads "Retrain"), the finished status box
    once more, as :func:`train_with_status` left it."""
    if (label := st.session_state.pop(P + "just_trained", None)) is not None:
        with st.status(label, state="complete", expanded=False):
            st.progress(1.0, text="done")


def training_took(path: Path) -> str:
    """`` in 8.1 s`` when this session trained the model at ``path`` (:func:`train_with_status`), else ``""``."""
    where, took = st.session_state.get(P + "trained_in", ("", 0.0))
    return f" in {took:.1f} s" if where == str(path) else ""


@st.cache_resource(show_spinner=False, max_entries=8)
def load_model(path: str, mtime_ns: int):  # noqa: ANN201 - Predictor imported lazily
    """A saved model, loaded once per file version.

    Parameters
    ----------
    path
        Model directory.
    mtime_ns
        Modification time of its ``metadata.json`` (part of the key only).

    Returns
    -------
    perfmodel.models.Predictor
    """
    from ..models import load_predictor

    return load_predictor(path)


@st.cache_data(show_spinner=False, max_entries=32)
def _training_rows(home: str, dataset_id: str, stamp: int, keep_suspect: bool) -> pd.DataFrame:
    runs = cached.dataset_runs(home, dataset_id, stamp)
    y = pd.to_numeric(runs.get("output_throughput_tok_s"), errors="coerce")
    train = runs.loc[(y > 0).fillna(False).to_numpy(dtype=bool)]
    if not keep_suspect:
        train = train.loc[~W.suspect_mask(train).to_numpy(dtype=bool)]
    return train


@st.cache_data(show_spinner="Predicting...", max_entries=64)
def result(home: str, dataset_id: str, stamp: int, path: str, mtime_ns: int, options: str, point: str,
           batches: str, level: float) -> W.WhatIfResult:
    """The what-if curve (see :func:`perfmodel.whatif.whatif`).

    Parameters
    ----------
    home, dataset_id, stamp
        The dataset.
    path, mtime_ns
        The saved model.
    options
        :func:`options_json` it was trained with.
    point
        JSON of the point's columns.
    batches
        JSON list of batch sizes.
    level
        Band level.

    Returns
    -------
    WhatIfResult

    Raises
    ------
    PerfmodelError
        An invalid or unknown input (column named).
    """
    opts = json.loads(options)
    train_rows = _training_rows(home, dataset_id, stamp, bool(opts["keep_suspect"]))
    return W.whatif(load_model(path, mtime_ns), train_rows, json.loads(point), json.loads(batches),
                    level=level, runs=cached.dataset_runs(home, dataset_id, stamp))


KV_FULL_HELP = (f"Beyond this batch the KV cache of full-length sequences no longer fits beside the weights in "
                f"{physics.KV_USABLE_FRACTION:.0%} of the devices' memory: a server preempts sequences and the curve "
                "flattens or drops. A knee near it has a memory-capacity cause. Empty where the catalog cannot say "
                "or the grouping leaves out hardware, model, devices or lengths.")
"""Help text of the fit tables' ``kv_full_batch`` column (Curves page)."""


def kv_caption(res: W.WhatIfResult) -> str | None:
    """The What-if caption about the KV-cache-full batch (None where the catalog cannot say)."""
    cap = res.kv_fit_batch
    if not math.isfinite(cap):
        return None
    return (f"KV cache: about {cap:,.0f} sequences of {float(res.point['input_len_tok']):g} + "
            f"{float(res.point['output_len_tok']):g} tokens fit beside the weights in "
            f"{physics.KV_USABLE_FRACTION:.0%} of the devices' memory. Beyond that batch a server preempts "
            "sequences, so throughput stops growing: so do the roofline bound and, beyond the trained batches, "
            "the prediction.")


def out_of_domain_text(res: W.WhatIfResult) -> str:
    """Which batches of the curve are out of domain (the predictor's ``in_domain``), named, e.g.
    ``batch 2048 (1 of 12)``. The reasons below the warning call outside the range of all training runs the
    batches the predictor's range rule flags (:func:`perfmodel.whatif.domain_reasons` with its
    ``domain_range_factor``), and only extrapolated those within it, so the two agree."""
    table = res.table
    out = table.loc[~table["in_domain"].astype(bool), "batch_size"].astype(float).tolist()
    shown = ", ".join(f"{b:g}" for b in out[:8]) + (", ..." if len(out) > 8 else "")
    return f"batch {shown} ({len(out)} of {len(table)})"


def rate(v: float) -> str:
    """A throughput for a metric tile: :func:`perfmodel.plots.compact_number` (41.42, 19,920, 169 k, 1.48 M)."""
    return compact_number(v)


def seconds(v: float) -> str:
    """A latency for a metric tile: :func:`perfmodel.plots.compact_seconds` (0.691 ms, 340 ms, 2.35 s, 1.9 min)."""
    return compact_seconds(v)


ROOFLINE_HELP = ("Physical upper bound on output throughput from the catalogs: the prompts' prefill at peak FLOPS, "
                 "then each decode step reading the weights and the KV cache at peak memory bandwidth (or doing its "
                 "FLOPs at peak, whichever takes longer). No run of this configuration can be faster: a measured point "
                 "above it is marked suspect.")
"""The Roofline bound tile's help where it shows a value."""
_ROOFLINE_NA = ("It reads n/a here: the catalog lacks a figure it needs: the bandwidth, the FLOPS, or the model's "
                "KV-cache size, which DeciLM-7B's per-layer KV heads leave undefined.")


def roofline_tile(bound_tok_s: float) -> tuple[str, str]:
    """The Roofline bound tile's value and help: why it is n/a only where it is (the help had said "n/a: the
    catalog lacks a figure ..." beside a bound of 2,499 tok/s).

    Parameters
    ----------
    bound_tok_s
        The predictions table's ``roofline_tok_s`` at the batch shown (NaN where the catalog lacks a figure).

    Returns
    -------
    (str, str)
        ``"2,499 tok/s"`` or ``"n/a"``, and the help.
    """
    v = float(bound_tok_s)
    if math.isfinite(v):
        return f"{rate(v)} tok/s", ROOFLINE_HELP
    return "n/a", f"{ROOFLINE_HELP} {_ROOFLINE_NA}"


def e2e_seconds(v: float) -> str:
    """An end-to-end latency for a metric tile, in the predictions table's unit (seconds) from one second on,
    with minutes beside it from two minutes on: ``187 s (3.11 min)``, ``2.35 s``, ``340 ms``. The tile had read
    ``3.11 min`` above a table column reading 187."""
    v = float(v)
    if not math.isfinite(v) or v < 1.0:
        return compact_seconds(v)
    return f"{in_seconds(v)} ({compact_seconds(v)})" if v >= 120.0 else in_seconds(v)


TABLE_ORDER = ("batch_size", "pred_throughput_tok_s", "pred_lower", "pred_upper", "confidence", "in_domain",
               "roofline_tok_s", "pred_total_throughput_tok_s", "pred_e2e_latency_s", "pred_e2e_lower_s",
               "pred_e2e_upper_s", "pred_ttft_s", "pred_ttft_lower_s", "pred_ttft_upper_s", "ttft_floor_s",
               "pred_tpot_s", "kv_fit_batch")
"""Columns of the predictions table as the page shows them (the point's own columns are the inputs above; the
CSV download has every column)."""


def table_config(level: float) -> dict[str, Any]:
    """``st.dataframe`` column configuration of the predictions table: labels with units, sensible precision.

    Parameters
    ----------
    level
        The band level (named in the band columns' help).
    """
    cc = st.column_config
    band = f"{level:.0%} band"

    def tok_s(label: str, text: str) -> Any:
        return cc.NumberColumn(f"{label} (tok/s)", format="%,.1f", help=text)

    def sec(label: str, text: str) -> Any:  # shown in ms (display_table)
        return cc.NumberColumn(f"{label} (ms)", format="%,.3g", help=text)

    def e2e(label: str, text: str) -> Any:  # kept in seconds (display_table)
        return cc.NumberColumn(f"{label} (s)", format="%,.3g", help=text)

    return {
        "batch_size": cc.NumberColumn("Batch", format="%g"),
        "pred_throughput_tok_s": tok_s("Output throughput", "Predicted output tokens per second."),
        "pred_lower": tok_s("Band low", f"Low end of the {band} of the output throughput."),
        "pred_upper": tok_s("Band high", f"High end of the {band} of the output throughput."),
        "confidence": cc.NumberColumn("Confidence", format="%.2f",
                                      help="0..1, higher = closer to the training data and narrower band."),
        "in_domain": cc.CheckboxColumn("In domain", help="Inside the predictor's training domain."),
        "roofline_tok_s": tok_s("Roofline bound", "Physical upper bound on output throughput (catalogs)."),
        "pred_total_throughput_tok_s": tok_s("Total throughput", "Input and output tokens per second."),
        "pred_e2e_latency_s": e2e("E2E latency", "Per request, by Little's law."),
        "pred_e2e_lower_s": e2e("E2E low", f"Low end of the {band} of the end-to-end latency."),
        "pred_e2e_upper_s": e2e("E2E high", f"High end of the {band} of the end-to-end latency."),
        "pred_ttft_ms": sec("TTFT", "Time to first token."),
        "pred_ttft_lower_ms": sec("TTFT low", f"Low end of the {band} of TTFT."),
        "pred_ttft_upper_ms": sec("TTFT high", f"High end of the {band} of TTFT."),
        "ttft_floor_ms": sec("TTFT floor", "The shortest TTFT physics allows: the prompts' FLOPs at peak, or "
                            "one read of the weights, whichever is longer (catalogs)."),
        "pred_tpot_ms": sec("TPOT", "Time per output token after the first."),
        "kv_fit_batch": cc.NumberColumn("KV-cache-full batch", format="%,.0f",
                                        help="The largest batch whose KV cache at full length fits in memory."),
    }


_E2E_COLUMNS = ("pred_e2e_latency_s", "pred_e2e_lower_s", "pred_e2e_upper_s")
"""End-to-end latencies stay in seconds on the page (a 1024-token answer at batch 256 read 1,660,000 ms)."""


def _in_ms(c: str) -> bool:
    """Whether the page shows column ``c`` (seconds) in milliseconds: TTFT, TPOT and the TTFT floor."""
    return (c.startswith("pred_") or c == "ttft_floor_s") and c.endswith("_s") and not c.endswith("_tok_s") \
        and c not in _E2E_COLUMNS


def shown_name(c: str) -> str:
    """A predictions-table column's name as the page shows it: ``pred_ttft_s`` in milliseconds is ``pred_ttft_ms``
    (the table's own CSV download keeps the page's units, under names that say them)."""
    return c[:-2] + "_ms" if _in_ms(c) else c


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """The predictions table as the page shows it: TTFT and TPOT in milliseconds (columns renamed ``_ms``),
    end-to-end latency in seconds (the page's CSV download keeps seconds throughout)."""
    out = table.copy()
    for c in out.columns:
        if _in_ms(c):
            out[c] = out[c] * 1e3
    return out.rename(columns=shown_name)


def figure(res: W.WhatIfResult, log_x: bool) -> go.Figure:
    """:func:`perfmodel.plots.whatif_figure` of a result."""
    return whatif_figure(res.table, res.measured, level=res.level, log_x=log_x)


def measured_caption(measured: pd.DataFrame, at_settings: str = "") -> str:
    """How many measured runs the chart shows, split as the chart splits them: this framework and device count,
    and the others (48 runs had been counted as "of this hardware, model and lengths" with other frameworks
    and device counts among them).

    Parameters
    ----------
    measured
        :attr:`perfmodel.whatif.WhatIfResult.measured` (``same_config``).
    at_settings
        `` at threads 2`` where the point names settings.

    Returns
    -------
    str
        Without a final stop.
    """
    n = len(measured)
    same = int(measured["same_config"].astype(bool).sum()) if "same_config" in measured.columns else n
    head = f"{n} measured run(s) of this hardware, model and lengths{at_settings}"
    if same == n:
        return head + ", all with this framework and device count"
    return head + f": {same} with this framework and device count, {n - same} with another (drawn apart)"


def result_csv(res: W.WhatIfResult) -> bytes:
    """The prediction table as CSV bytes (for the download button), with the band's ``level`` beside
    ``pred_upper`` (the file had not said whether its band was 80, 90 or 95 %), its columns in the table's order
    and computed numbers to :data:`CSV_SIGNIFICANT` significant digits."""
    t = res.table.copy()
    at = t.columns.get_loc("pred_upper") + 1 if "pred_upper" in t.columns else len(t.columns)
    # none where the predictor gives no band (the baselines, the hybrid), as the page's band level is then off
    t.insert(at, "level", np.where(pd.to_numeric(t["pred_lower"], errors="coerce").notna(), res.level, np.nan)
             if "pred_lower" in t.columns else res.level)
    for c in t.columns:
        if pd.api.types.is_float_dtype(t[c]):
            t[c] = t[c].map(_csv_number)
    return t.to_csv(index=False).encode()


CSV_SIGNIFICANT = 6
"""Significant digits of a computed number in the What-if download: far more than any prediction's accuracy, and
free of binary noise (a throughput had been written ``91.72733500000002``)."""


def _csv_number(v: float) -> float:
    """``v`` to :data:`CSV_SIGNIFICANT` significant digits, a whole number (a batch, a length) as it is; written
    back by pandas as the shortest text that reads as the rounded value (``91.7273``)."""
    v = float(v)
    if not math.isfinite(v) or v == round(v):
        return v
    return float(f"{v:.{CSV_SIGNIFICANT}g}")


def _flagged_columns(runs: pd.DataFrame, measured: str) -> list[str]:
    """The columns a table of flagged runs shows: what the run was, the ``measured`` value flagged, where from."""
    return [c for c in ("hardware", "model", "framework", "device_count", "input_len_tok", "output_len_tok",
                        "batch_size", measured, "source_file", "source_row") if c in runs.columns]


@st.cache_data(show_spinner=False, max_entries=32)
def fast_ttft_runs(home: str, dataset_id: str, stamp: int) -> pd.DataFrame:
    """The runs of a dataset whose TTFT is shorter than physics allows, with the floor beside them.

    Parameters
    ----------
    home, dataset_id, stamp
        The dataset.

    Returns
    -------
    pandas.DataFrame
        The runs :func:`perfmodel.physics.flag_fast_ttft` flags (identity columns, lengths, batch, ``ttft_s``)
        and ``ttft_floor_s`` (:func:`perfmodel.physics.roofline`'s ``ttft_s_min``).
    """
    from .. import physics

    runs = cached.dataset_runs(home, dataset_id, stamp)
    cols = _flagged_columns(runs, "ttft_s")
    runs = runs.iloc[np.flatnonzero(W.judgeable(runs))]  # a run without a batch (an "inf"-rate burst) is not judged
    if "ttft_s" not in runs.columns or not len(runs):
        return pd.DataFrame(columns=[*cols, "ttft_floor_s"])
    bounds = physics.roofline(runs)
    flag = physics.flag_fast_ttft(runs, bounds=bounds).to_numpy(dtype=bool)
    out = runs.loc[flag, cols].copy()
    out["ttft_floor_s"] = bounds["ttft_s_min"].to_numpy(dtype=float)[flag]
    return out


@st.cache_data(show_spinner=False, max_entries=32)
def suspect_runs(home: str, dataset_id: str, stamp: int) -> pd.DataFrame:
    """The runs of a dataset faster than the physical bound, with the bound beside them.

    Parameters
    ----------
    home, dataset_id, stamp
        The dataset.

    Returns
    -------
    pandas.DataFrame
        The suspect runs (identity columns, lengths, batch, measured throughput) and
        ``bound_tok_s`` (batch x bandwidth / weight bytes: reading the weights once per step).
    """
    from .. import physics

    runs = cached.dataset_runs(home, dataset_id, stamp)
    sus = runs.loc[W.suspect_mask(runs).to_numpy(dtype=bool)]
    cols = _flagged_columns(sus, "output_throughput_tok_s")
    out = sus[cols].copy()
    if len(sus):
        b = physics.roofline(sus)
        out["bound_tok_s"] = (sus["batch_size"].astype("float64") * b["mem_bw_bps"]
                              / (b["active_params"] * b["dtype_bytes"])).to_numpy(dtype=float)
    else:
        out["bound_tok_s"] = pd.Series(dtype="float64")
    return out


def curves_with_suspects(fig: go.Figure, table: pd.DataFrame, home: str, dataset_id: str, stamp: int,
                         by: list[str], configs: list[str], y: str, x: str = "batch_size") -> tuple[go.Figure, int]:
    """Overlay the suspect runs of the shown configurations on the Curves chart.

    Parameters
    ----------
    fig
        The Curves page's figure (a copy is drawn on).
    table
        The page's fit table (``configuration`` and the ``by`` columns).
    home, dataset_id, stamp
        The dataset.
    by
        Grouping columns of the page.
    configs
        Labels of the configurations shown.
    y
        Throughput column on the y axis.
    x
        The curves' x column (batch, request rate or requests in flight): a suspect without a value there
        is not drawn.

    Returns
    -------
    (Figure, int)
        The figure with an 'x' trace for the suspects, and how many suspect runs are shown.
    """
    sus = suspect_runs(home, dataset_id, stamp)
    runs = cached.dataset_runs(home, dataset_id, stamp)
    need = [*by, "configuration"]
    if not len(sus) or any(c not in runs.columns for c in by) or any(c not in table.columns for c in need) \
            or y not in runs.columns or x not in runs.columns:
        return fig, 0
    rows = runs.loc[sus.index].merge(table[need].drop_duplicates(), on=by, how="inner")
    shown = rows[rows["configuration"].isin(configs) & (pd.to_numeric(rows[x], errors="coerce") > 0)]
    if not len(shown):
        return fig, 0
    return add_suspect_markers(go.Figure(fig), shown, x=x, y=y), len(shown)


def confidence_help(predictor: str, low: float) -> str:
    """The What-if page's help for its Confidence tile: what the number is for this predictor.

    The three kinds of predictor mean different things by it, and a user comparing them should know: a
    published hybrid's 0.97 at a length nobody measured is a distance in feature space, not a band.

    Parameters
    ----------
    predictor
        Predictor name.
    low
        The confidence below which the page warns.

    Returns
    -------
    str
    """
    if predictor == "roofline-gbm":
        return ("0..1: the prediction divided by the upper end of its calibrated 90% band (0.5: the band reaches twice "
                "the prediction), so it falls as the band widens away from the data. It is read from the 90% band "
                "whichever band level the page shows, so it does not change with the level. On held-out rows of "
                "LLM-Inference-Bench it tracks the error (Spearman -0.34 to -0.61 by protocol). "
                f"Below {low:g} (a 90% band wider than a factor 25) the page warns.")
    if predictor == "ala":
        return ("0..1: the published hybrid's nearest-neighbour similarity, 1 / (1 + median distance to the 5 nearest "
                "training points). It is not calibrated and has no band: it stays high at lengths or batches "
                "nobody measured when the other features are close (Spearman with the error +0.06 to -0.68 by "
                "protocol on LLM-Inference-Bench). Compare with roofline-gbm's, which comes from its band.")
    return "This predictor (a published baseline) gives no confidence and no band: n/a."
