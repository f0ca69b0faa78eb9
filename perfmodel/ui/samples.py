"""Sample data: the real measurements shipped in ``sample_runs/``.

An empty store makes an empty app; so on first start the app imports every
``sample_runs/*.csv`` (canonical CSV files measured by perfmodel's local
engine on a CPU) as one dataset and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["SAMPLE_DIR", "SAMPLE_DATASET_NAME", "SAMPLE_FORMAT", "sample_files", "ensure_sample_data",
           "sample_notice_text"]

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "sample_runs"
"""``sample_runs/`` of the source checkout (absent in a wheel install: then there is no sample)."""
SAMPLE_DATASET_NAME = "sample runs"
SAMPLE_FORMAT = "canonical"
"""The sample files are perfmodel's own export format."""


def sample_files(directory: str | Path | None = None) -> list[Path]:
    """The sample CSV files, sorted by name.

    Parameters
    ----------
    directory
        Where to look; :data:`SAMPLE_DIR` by default.

    Returns
    -------
    list of Path
        Empty when the directory does not exist.
    """
    d = Path(directory) if directory is not None else SAMPLE_DIR
    return sorted(p for p in d.glob("*.csv") if p.is_file()) if d.is_dir() else []


def ensure_sample_data(store: Store, directory: str | Path | None = None) -> list[str]:
    """Import the sample files into ``store`` as one dataset when the store has no dataset.

    Parameters
    ----------
    store
        The store to fill.
    directory
        Where the sample CSV files are; :data:`SAMPLE_DIR` by default.

    Returns
    -------
    list of str
        The names of the files imported; empty when the store already held a
        dataset or there is no sample file.

    Raises
    ------
    PerfmodelError
        A sample file could not be imported (nothing is stored).
    """
    if store.datasets():
        return []
    files = sample_files(directory)
    if not files:
        return []
    from ..api import import_files

    import_files(files, format=SAMPLE_FORMAT, name=SAMPLE_DATASET_NAME, store=store)
    return [p.name for p in files]


def sample_notice_text(names: Sequence[str]) -> str:
    """The message shown after the sample data was imported.

    Parameters
    ----------
    names
        File names imported.

    Returns
    -------
    str
    """
    return (f"The store was empty, so perfmodel imported its sample data ({len(names)} file{'s' if len(names) != 1 else ''}) as the dataset "
            f"**{SAMPLE_DATASET_NAME}**: real measurements made by perfmodel itself, with small random-weight "
            "models on a 2-vCPU VM and Llama-shaped random-weight models on an NVIDIA H200 GPU (see "
            "`sample_runs/README.md`; the dataset table below lists the files). Import your own result files below.")
