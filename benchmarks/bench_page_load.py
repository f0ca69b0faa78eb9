"""First page loads of the app: for each page, a fresh Python process renders it headless with AppTest.

Usage: ``python benchmarks/bench_page_load.py [--repeats 1] [--pages whatif,curves] [--profile DIR] [--data FILE]``.

A store holding the sample data (``sample_runs/``), or with ``--data`` one imported file (for example
``../shared/data/llm-inference-bench/All_results.csv``, 4,772 runs; Monitor then replays it, as its link
``?source=Stored dataset (replay)`` asks), is prepared once in a temporary data directory; each
measurement copies it to its own directory (so nothing a page writes, a fitted model or a cache file,
helps the next one) and starts a new interpreter, which

1. imports ``streamlit.testing.v1`` (the server has Streamlit loaded before it runs any page),
2. times ``import perfmodel.ui`` (*import s*: what the app adds on top of Streamlit),
3. times the first ``run()`` of ``AppTest.from_file("app.py")`` switched to the page, as a fresh server
   asked for the page's URL runs the router, the shared sidebar and the page (*first render s*: the page's
   own imports, its first reads of the store and every computation no cache has yet),
4. times a second ``run()`` of the same AppTest session (*second render s*: what the caches leave).

With ``--repeats N`` each cell is the median of N fresh processes. ``--profile DIR`` also writes a
cProfile of each page's first render to ``DIR/<page>.prof`` (read it with ``python -m pstats``). The
What-if and Attribution pages stop at "press Train" on a store with no trained model, as a first visit
does. Prints a Markdown table; the numbers belong in the issue note, not in tests.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 300

_PREPARE = """
from perfmodel.store import Store
from perfmodel.ui.samples import ensure_sample_data
names = ensure_sample_data(Store())
assert names, "no sample data imported"
"""

_PREPARE_FILE = """
import sys
from perfmodel.api import import_files
import_files([sys.argv[1]])
"""

#: Query strings a page is opened with when the store holds a --data file (the monitor page replays it).
DATA_QUERY = {"monitor": {"source": "Stored dataset (replay)"}}

_USE = f"""
import sys
from streamlit.testing.v1 import AppTest
for page in sys.argv[1:]:
    at = AppTest.from_file("app.py", default_timeout={TIMEOUT_S})
    at.switch_page(page)
    at.run()
    if page.endswith("whatif.py"):
        at.button(key="whatif.train").click().run()
    assert not at.exception, [e.value for e in at.exception]
"""

_CHILD = f"""
import json, sys, time
page, profile, query = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
from streamlit.testing.v1 import AppTest
t0 = time.perf_counter()
import perfmodel.ui
import_s = time.perf_counter() - t0
at = AppTest.from_file("app.py", default_timeout={TIMEOUT_S})
for k, v in query.items():
    at.query_params[k] = v
at.switch_page(page)  # the first run lands on the page, as a request for its URL does
# A server scans the installed packages for components once, at start; AppTest does it on its first run
# (0.7-1.9 s here). Do it before the clock starts so the first render is the page's own cost.
try:
    from streamlit.components.v2.component_manager import BidiComponentManager
    if getattr(at, "_bidi_component_manager", "absent") is None:
        manager = BidiComponentManager()
        manager.discover_and_register_components(start_file_watching=False)
        at._bidi_component_manager = manager
except ImportError:
    pass
prof = None
if profile:
    # The page runs in the script-runner thread: profile that thread, not this one.
    import cProfile
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
    prof = cProfile.Profile()
    run_script = ScriptRunner._run_script
    def _profiled(self, *args, **kwargs):
        prof.enable()
        try:
            return run_script(self, *args, **kwargs)
        finally:
            prof.disable()
    ScriptRunner._run_script = _profiled
t0 = time.perf_counter()
at.run()
first_s = time.perf_counter() - t0
if prof is not None:
    ScriptRunner._run_script = run_script
    prof.dump_stats(profile)
errors = [str(e.value) for e in at.exception]
t0 = time.perf_counter()
at.run()
second_s = time.perf_counter() - t0
errors += [str(e.value) for e in at.exception]
print("BENCH" + json.dumps({{"import_s": import_s, "first_s": first_s, "second_s": second_s, "errors": errors}}))
"""


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ, PERFMODEL_HOME=str(home), STREAMLIT_LOGGER_LEVEL="error")
    env.pop("PERFMODEL_CATALOG", None)
    return env


def _prepare(home: Path, argv: list[str]) -> None:
    out = subprocess.run([sys.executable, "-c", *argv], capture_output=True, text=True, cwd=REPO, env=_env(home),
                         timeout=TIMEOUT_S * 3)
    if out.returncode != 0:
        raise SystemExit(f"preparing the store failed (rc {out.returncode}):\n{out.stderr[-4000:]}")


def _measure(page: str, template: Path, work: Path, profile: Path | None, query: dict[str, str]) -> dict:
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(template, home)
    out = subprocess.run([sys.executable, "-c", _CHILD, page, str(profile or ""), json.dumps(query)], capture_output=True,
                         text=True, cwd=REPO, env=_env(home), timeout=TIMEOUT_S * 3)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("BENCH")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"{page}: the child failed (rc {out.returncode}):\n{out.stderr[-4000:]}")
    return json.loads(lines[-1][len("BENCH"):])


def main() -> None:
    logging.disable(logging.WARNING)  # Streamlit's "No runtime found" lines, outside a server
    from perfmodel.ui.shell import PAGE_SPECS

    logging.disable(logging.NOTSET)

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=1, help="fresh processes per page (median reported)")
    ap.add_argument("--pages", default="", help="comma-separated page names (default: every page)")
    ap.add_argument("--profile", type=Path, default=None, help="write DIR/<page>.prof of each first render")
    ap.add_argument("--used-store", action="store_true",
                    help="open every page once in the template store first and train the What-if page's default "
                         "model, so the on-disk caches (trained models, SHAP values) exist: a restarted server")
    ap.add_argument("--data", type=Path, default=None,
                    help="a result file to import into the store instead of the sample data")
    args = ap.parse_args()
    pages = [s.path for s in PAGE_SPECS]
    if args.pages:
        wanted = set(args.pages.split(","))
        pages = [p for p in pages if Path(p).stem in wanted]
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-page-load-") as tmp:
        template = Path(tmp) / "template"
        template.mkdir()
        t0 = time.perf_counter()
        if args.data is not None:
            _prepare(template, [_PREPARE_FILE, str(args.data.resolve())])
        else:
            _prepare(template, [_PREPARE])
        if args.used_store:
            _prepare(template, [_USE, *[s.path for s in PAGE_SPECS]])
        what = f"{args.data.name}" if args.data is not None else "sample"
        store = f"used {what} store (models trained)" if args.used_store else f"fresh {what} store"
        print(f"{store} prepared in {time.perf_counter() - t0:.1f} s; {os.cpu_count()} CPU(s); "
              f"median of {args.repeats} fresh process(es) per page\n")
        print("| page | import s | first render s | second render s |")
        print("| --- | ---: | ---: | ---: |")
        totals = [0.0, 0.0, 0.0]
        for page in pages:
            runs = []
            for i in range(args.repeats):
                prof = args.profile / f"{Path(page).stem}.prof" if args.profile is not None and i == 0 else None
                query = DATA_QUERY.get(Path(page).stem, {}) if args.data is not None else {}
                runs.append(_measure(page, template, Path(tmp), prof, query))
            cells = [statistics.median(r[k] for r in runs) for k in ("import_s", "first_s", "second_s")]
            totals = [a + b for a, b in zip(totals, cells, strict=True)]
            errors = sorted({e for r in runs for e in r["errors"]})
            note = f" (exception: {errors[0][:80]})" if errors else ""
            print(f"| {Path(page).stem}{note} | {cells[0]:.2f} | {cells[1]:.2f} | {cells[2]:.2f} |", flush=True)
        print(f"| **total** | {totals[0]:.2f} | {totals[1]:.2f} | {totals[2]:.2f} |")


if __name__ == "__main__":
    main()
