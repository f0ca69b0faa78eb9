"""Where perfmodel keeps its data.

The data directory holds the store (``perfmodel.sqlite``), fitted models and the
user's own catalog files (``catalog/*.yaml``). It is ``$PERFMODEL_HOME`` when
set, else ``~/.perfmodel``; the CLI's ``--home`` option sets the variable.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["HOME_ENV", "CATALOG_ENV", "home_dir", "user_catalog_paths"]

HOME_ENV = "PERFMODEL_HOME"
CATALOG_ENV = "PERFMODEL_CATALOG"


def home_dir(create: bool = True) -> Path:
    """The data directory (created on first use when ``create``)."""
    raw = os.environ.get(HOME_ENV)
    path = Path(raw).expanduser() if raw else Path.home() / ".perfmodel"
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def user_catalog_paths() -> list[Path]:
    """User catalog YAML files: ``<home>/catalog/*.yaml`` plus any in ``$PERFMODEL_CATALOG``
    (files or directories, separated by ``os.pathsep``)."""
    paths: list[Path] = []
    cat_dir = home_dir(create=False) / "catalog"
    if cat_dir.is_dir():
        paths += sorted(cat_dir.glob("*.y*ml"))
    for part in filter(None, os.environ.get(CATALOG_ENV, "").split(os.pathsep)):
        p = Path(part).expanduser()
        paths += sorted(p.glob("*.y*ml")) if p.is_dir() else [p]
    return paths
