"""A recorded stream whose timestamps go back in time is judged in file order, and says so.

The samples stay in file order on purpose (a live monitor receives them so; streams._finish), but a file whose
rows had been shuffled gave "0 alert(s)" with nothing said. Epoch milliseconds in a column read as seconds are
named too.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from perfmodel.cli import main
from perfmodel.monitor import read_stream, read_stream_bytes

DATA = Path(__file__).parent / "data" / "monitor"


def _csv(times: list[float] | np.ndarray, column: str = "timestamp") -> bytes:
    rows = [f"{column},output_throughput_tok_s"] + [f"{t:.0f},{100 if t < 1_700_000_150 else 50}" for t in times]
    return ("\n".join(rows) + "\n").encode()


def _shuffled() -> np.ndarray:
    t = 1_700_000_000 + np.arange(200)
    np.random.default_rng(0).shuffle(t)
    return t


def test_timestamps_going_back_are_counted_and_the_first_named() -> None:
    t = _shuffled()
    s = read_stream_bytes("shuffled.csv", _csv(t))
    (note,) = s.notes
    back = int((np.diff(t) < 0).sum())
    first = int(np.flatnonzero(np.diff(t) < 0)[0]) + 2  # the data row (1-based) that goes back
    assert f"{back} of 200 sample(s) go back in time, the first at row {first}:" in note
    assert f"t={t[first - 1]} s after t={t[first - 2]} s" in note and "judged in file order" in note
    assert s.frame["timestamp_s"].tolist() == [float(x) for x in t]  # still file order
    assert read_stream_bytes("sorted.csv", _csv(np.sort(t))).notes == ()


def test_groups_are_ordered_on_their_own() -> None:
    # two replicas interleaved, each in time order: nothing goes back
    rows = "timestamp,group,ttft_s\n" + "".join(f"{10 + i},a,0.1\n{5 + i},b,0.1\n" for i in range(5))
    assert read_stream_bytes("two.csv", rows.encode()).notes == ()
    rows += "1,b,0.1\n"
    (note,) = read_stream_bytes("two.csv", rows.encode()).notes
    assert "1 of 11 sample(s) go back in time, the first at row 11 (group b)" in note


def test_scrapes_out_of_order_name_their_line() -> None:
    text = (DATA / "metrics_dump.prom").read_text()
    blocks = ["# TIMESTAMP " + b for b in text.split("# TIMESTAMP ") if b]
    swapped = "".join([blocks[0], blocks[2], blocks[1], *blocks[3:]])
    (note,) = read_stream_bytes("dump.prom", swapped.encode()).notes
    assert "1 of 6 sample(s) go back in time, the first at the scrape at line 21" in note
    assert read_stream(DATA / "metrics_dump.prom").notes == ()


def test_epoch_milliseconds_in_a_seconds_column_are_named() -> None:
    ms = 1_700_000_000_000 + 1000 * np.arange(20)
    (note,) = read_stream_bytes("ms.csv", _csv(ms)).notes
    assert "'timestamp'" in note and "epoch milliseconds" in note and "timestamp_ms" in note
    assert read_stream_bytes("ms.csv", _csv(ms, "timestamp_ms")).notes == ()  # read as milliseconds
    assert read_stream_bytes("s.csv", _csv(ms / 1000)).notes == ()


def test_the_cli_warns_and_keeps_json_clean(tmp_path: Path) -> None:
    f = tmp_path / "shuffled.csv"
    f.write_bytes(_csv(_shuffled()))
    res = CliRunner().invoke(main, ["monitor", str(f)])
    assert res.exit_code == 0
    assert "warning: shuffled.csv: " in res.stderr and "go back in time" in res.stderr
    res = CliRunner().invoke(main, ["detect", str(f), "--json"])
    assert res.exit_code == 0 and isinstance(json.loads(res.stdout), list) and "go back in time" in res.stderr


def test_the_monitor_page_shows_the_warning() -> None:
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        import numpy as np
        from test_monitor_time_order import _csv, _shuffled

        from perfmodel.ui import monitor as M

        M.stream_from_upload("shuffled.csv", _csv(_shuffled()))
        M.stream_from_upload("sorted.csv", _csv(np.sort(_shuffled())))

    at = AppTest.from_function(page, default_timeout=30).run()
    assert not at.exception
    assert len(at.warning) == 1 and "go back in time" in at.warning[0].value
