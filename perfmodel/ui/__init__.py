"""The Streamlit layer: the only package of perfmodel that imports Streamlit.

Pages call the public core through the cached wrappers here (keys are
primitives), keep only selections in ``st.session_state`` (keys in
:mod:`perfmodel.ui.state`), and draw with the shared widgets.
"""

from __future__ import annotations

from . import state
from .cached import (
    clear_store_caches,
    dataset_issues,
    dataset_runs,
    datasets_table,
    filter_choices,
    filtered_csv,
    filtered_runs,
    filters_json,
    format_choices,
    hardware_choices,
    model_choices,
    open_store,
    runs_figure,
    store_stamp,
    superlinear_runs,
)
from .forms import AS_IN_FILE, AUTO_FORMAT, UploadForm, import_uploads, in_form_words, to_meta
from .links import absolute as absolute_link
from .links import link_warning, restore_from_link, select_dataset, selected_dataset, write_link
from .pickers import (
    NO_DATASET,
    Datasets,
    available_datasets,
    dataset_selectbox,
    no_runs_text,
    require_runs,
    restore_dataset_link,
)
from .samples import SAMPLE_DATASET_NAME, ensure_sample_data, sample_files
from .shell import PAGE_SPECS, PAGE_TITLE, PageSpec, home, pages, routed, sidebar, startup
from .widgets import (
    issues_table,
    keep_valid,
    reset_upload_form,
    sample_notice,
    show_error,
    upload_files_key,
    upload_form,
)

__all__ = [
    "state",
    "clear_store_caches",
    "dataset_issues",
    "dataset_runs",
    "datasets_table",
    "filter_choices",
    "filtered_csv",
    "filtered_runs",
    "filters_json",
    "format_choices",
    "hardware_choices",
    "home",
    "model_choices",
    "open_store",
    "runs_figure",
    "store_stamp",
    "superlinear_runs",
    "AS_IN_FILE",
    "AUTO_FORMAT",
    "UploadForm",
    "import_uploads",
    "to_meta",
    "absolute_link",
    "link_warning",
    "restore_from_link",
    "select_dataset",
    "selected_dataset",
    "write_link",
    "NO_DATASET",
    "in_form_words",
    "no_runs_text",
    "require_runs",
    "Datasets",
    "available_datasets",
    "dataset_selectbox",
    "restore_dataset_link",
    "SAMPLE_DATASET_NAME",
    "ensure_sample_data",
    "sample_files",
    "PAGE_SPECS",
    "PAGE_TITLE",
    "PageSpec",
    "pages",
    "sidebar",
    "startup",
    "routed",
    "issues_table",
    "keep_valid",
    "sample_notice",
    "show_error",
    "upload_form",
    "upload_files_key",
    "reset_upload_form",
]
