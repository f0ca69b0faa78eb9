"""Session-state and URL keys of the app, in one place.

Every widget key starts with its page's prefix (``data.``) so pages never
collide; ``st.session_state`` holds these selections only, never results.
"""

from __future__ import annotations

__all__ = [
    "QP_DATASET",
    "QP_FILTER",
    "DATASET",
    "DATASET_WIDGET",
    "FILTER",
    "X_AXIS",
    "Y_AXIS",
    "COLOR",
    "LOG_X",
    "COLUMNS",
    "ISSUE_SEVERITY",
    "IMPORT_ISSUE_SEVERITY",
    "LAST_IMPORT",
    "LAST_IMPORT_KNOWN",
    "LAST_IMPORT_RENAMED",
    "UPLOAD_FORM",
    "UPLOAD_FILES",
    "UPLOAD_SUBMIT",
    "FORM_FIELD",
    "UPLOAD_COUNT",
    "SAMPLE_NOTICE",
    "SAMPLE_CHECKED",
    "ROUTED",
    "SAMPLE_ERROR",
    "DELETE_CONFIRM",
    "QP_CURVES",
    "CURVES_DATASET_WIDGET",
    "CURVES_BY",
    "CURVES_CONFIGS",
    "CURVES_SHAPE",
    "CURVES_INTERVALS",
    "CURVES_INTERVALS_CHOSEN",
    "CURVES_N_BOOT",
    "CURVES_Y",
    "CURVES_R2_MIN",
    "CURVES_LOG_X",
]

# --- URL query parameters (what a copied link restores in a new session)
QP_DATASET = "dataset"
#: One query parameter per filter, repeated for several values: ``?hardware=a100&hardware=h100``.
QP_FILTER = {"hardware": "hardware", "model": "model", "framework": "framework", "lengths": "lengths"}

# --- Data page selections
#: The selected dataset id, shared by every page (not a widget key, so it survives page switches).
DATASET = "ui.dataset"
DATASET_WIDGET = "data.dataset"
FILTER = {name: f"data.filter.{name}" for name in QP_FILTER}
X_AXIS = "data.x"
Y_AXIS = "data.y"
COLOR = "data.color"
LOG_X = "data.log_x"
COLUMNS = "data.columns"
ISSUE_SEVERITY = "data.issue_severity"
IMPORT_ISSUE_SEVERITY = "data.import_issue_severity"
#: Id of the dataset the last Import in this session created (to show its counts and issues).
LAST_IMPORT = "data.last_import"
#: Whether that dataset was already in the store (the same content imported before: nothing was added).
LAST_IMPORT_KNOWN = "data.last_import_known"
#: Its former name, where the name typed in the form renamed it (None otherwise).
LAST_IMPORT_RENAMED = "data.last_import_renamed"
DELETE_CONFIRM = "data.delete_confirm"

# --- upload form
UPLOAD_FORM = "data.upload"
UPLOAD_FILES = "data.upload.files"
UPLOAD_SUBMIT = "data.upload.submit"
FORM_FIELD = {name: f"data.upload.{name}" for name in (
    "format", "hardware", "model", "framework", "framework_version", "device_count", "tp_size",
    "pp_size", "weight_dtype", "kv_cache_dtype", "quantization", "input_len_tok", "output_len_tok", "batch_size",
    "load_kind", "arrival", "burstiness", "latency_unit", "column_map", "name")}
#: How many imports this session has made: part of the file uploader's key, so that a new one starts empty.
UPLOAD_COUNT = "data.upload_count"

# --- app-wide
#: File names of the sample data imported into an empty store in this session.
SAMPLE_NOTICE = "ui.sample_notice"
SAMPLE_CHECKED = "ui.sample_checked"
ROUTED = "ui.routed"
"""Set once ``app.py``'s router has run in this session (:func:`perfmodel.ui.shell.routed`)."""
#: Why the sample data could not be imported (shown on the Data page).
SAMPLE_ERROR = "ui.sample_error"

# --- Curves page selections
#: URL parameters of the Curves page (``by`` and ``config`` repeat): name -> query parameter.
QP_CURVES = {"by": "by", "config": "config", "shape": "shape", "intervals": "ci"}
CURVES_DATASET_WIDGET = "curves.dataset"
CURVES_BY = "curves.by"
#: Labels of the configurations overlaid on the chart.
CURVES_CONFIGS = "curves.configs"
CURVES_SHAPE = "curves.shape"
CURVES_INTERVALS = "curves.intervals"
#: The interval method the user chose (in the box, or by a link's ``ci``), kept apart from the widget's own
#: state so that it survives a page switch. Until one is chosen the page uses the size-dependent default
#: (:func:`perfmodel.curves.default_interval_method`) and leaves ``ci`` out of the link.
CURVES_INTERVALS_CHOSEN = "curves.intervals_chosen"
CURVES_N_BOOT = "curves.n_boot"
CURVES_Y = "curves.y"
CURVES_R2_MIN = "curves.r2_min"
CURVES_LOG_X = "curves.log_x"
