"""Layering: Streamlit is imported only by perfmodel/ui/, app.py and pages/.

The core must stay usable from a notebook or the CLI without Streamlit, so a
``import streamlit`` that creeps into ``perfmodel/`` outside ``ui/`` fails here.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "perfmodel"
UI = PACKAGE / "ui"


def _streamlit_imports(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else []
        else:
            continue
        if any(n == "streamlit" or n.startswith("streamlit.") for n in names):
            lines.append(node.lineno)
    return lines


def test_scanner_finds_streamlit_imports(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("import os\nfrom streamlit.testing.v1 import AppTest\ndef f():\n    import streamlit as st\n")
    assert _streamlit_imports(f) == [2, 4]


def test_no_streamlit_outside_ui() -> None:
    offenders = []
    files = [p for p in PACKAGE.rglob("*.py") if UI not in p.parents]
    assert len(files) > 10, "the package scan found too few modules; is the path right?"
    for path in files:
        for line in _streamlit_imports(path):
            offenders.append(f"{path.relative_to(REPO)}:{line}")
    assert not offenders, ("Streamlit may only be imported in perfmodel/ui/, app.py and pages/; found in: "
                           + ", ".join(offenders))


def test_app_and_pages_use_streamlit_through_ui() -> None:
    assert _streamlit_imports(REPO / "app.py")
    for page in (REPO / "pages").glob("*.py"):
        assert "from perfmodel import ui" in page.read_text(encoding="utf-8"), f"{page.name} bypasses perfmodel.ui"


def _python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter in the repository (a clean ``sys.modules``); it must succeed."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    return out


def test_importing_the_core_does_not_load_streamlit() -> None:
    code = ("import sys\n"
            "import perfmodel, perfmodel.schema, perfmodel.plots, perfmodel.store, perfmodel.api\n"
            "from perfmodel.importers import registry\n"
            "registry()\n"
            "bad = sorted(m for m in sys.modules if m == 'streamlit' or m.startswith('streamlit.'))\n"
            "print(len(bad))\n")
    out = _python(code)
    assert out.stdout.strip() == "0", "importing the core pulled in Streamlit"


def test_the_sweeps_page_does_not_import_httpx_until_a_sweep_runs() -> None:
    """The Sweeps page imported perfmodel.sweep.http_backend (httpx and the backend: ~0.3 s on every cold
    load) for two constants; they live in perfmodel.sweep.plan, and http_backend re-exports them."""
    code = ("import sys\n"
            "import perfmodel.ui.sweeps, perfmodel.sweep.runner\n"
            "print(sorted(m for m in sys.modules if m == 'httpx' or m == 'perfmodel.sweep.http_backend'))\n"
            "from perfmodel.sweep import http_backend, plan\n"
            "print(http_backend.SERVER_TYPES is plan.SERVER_TYPES,\n"
            "      http_backend.DEFAULT_LENGTH_CONTROL is plan.DEFAULT_LENGTH_CONTROL,\n"
            "      http_backend.LENGTH_CONTROLS is plan.LENGTH_CONTROLS)\n")
    out = _python(code)
    assert out.stdout.splitlines() == ["[]", "True True True"], out.stdout


def test_page_scripts_have_no_bare_strings_streamlit_would_draw() -> None:
    # Streamlit's "magic" draws a bare expression of a page script: a constant's docstring under it showed as a
    # line of text above the Curves page's title.
    for path in sorted((Path(__file__).resolve().parents[1] / "pages").glob("*.py")):
        body = ast.parse(path.read_text()).body
        bare = [n.lineno for n in body[1:] if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)]
        assert not bare, f"{path.name}: bare string(s) at line(s) {bare} would be drawn on the page"


def test_single_choice_toggles_cannot_be_emptied() -> None:
    # A segmented control or pills of one choice returns None when its selected option is clicked again: the
    # Attribution page then raised AttributeError ('NoneType' object has no attribute 'removeprefix') on "Run the
    # comparison". Every one in the app is required (a multi-selection may be empty).
    found = 0
    for path in sorted([*(REPO / "pages").glob("*.py"), REPO / "app.py", *(PACKAGE / "ui").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("segmented_control", "pills")):
                continue
            kw = {k.arg: k.value for k in node.keywords}
            mode = kw.get("selection_mode")
            if isinstance(mode, ast.Constant) and mode.value == "multi":
                continue
            found += 1
            req = kw.get("required")
            assert isinstance(req, ast.Constant) and req.value is True, \
                f"{path.name}:{node.lineno}: {node.func.attr} without required=True can return None"
    assert found >= 3
