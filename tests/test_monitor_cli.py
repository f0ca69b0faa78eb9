"""CLI: perfmodel detect / monitor on a recorded stream."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from perfmodel.cli import main

DATA = Path(__file__).parent / "data" / "monitor"


def test_detect_json_lists_alerts_with_hints() -> None:
    res = CliRunner().invoke(main, ["detect", str(DATA / "stream.csv"), "--metric", "tpot_s", "--json"])
    assert res.exit_code == 0, res.output
    recs = json.loads(res.output)
    big = [r for r in recs if r["score"] > 10]
    assert len(big) == 1
    r = big[0]
    assert r["group"] == "replica-a" and r["detector"] == "window" and r["start_timestamp_s"] == 1700000150.0
    assert [c["code"] for c in r["hint"]["causes"]][:2] == ["decode_grew", "kv_cache_full"]


def test_monitor_file_text_and_threshold_expectation() -> None:
    res = CliRunner().invoke(main, ["monitor", str(DATA / "stream.csv"), "--detector", "threshold",
                                    "--metric", "output_throughput_tok_s", "--expected", "output_throughput_tok_s=1200"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("stream.csv: 400 samples, 1 group(s), detector threshold: 1 alert(s)")
    assert "output_throughput_tok_s changed -3" in res.output or "decode time per token" in res.output


def test_bad_input_exits_2_with_location() -> None:
    res = CliRunner().invoke(main, ["detect", str(DATA / "bad_value.csv")])
    assert res.exit_code == 2 and "row 3, column 'ttft_s'" in res.output
    res = CliRunner().invoke(main, ["monitor"])
    assert res.exit_code == 2 and "give a FILE or --target URL" in res.output
    res = CliRunner().invoke(main, ["detect", str(DATA / "stream.csv"), "--expected", "x"])
    assert res.exit_code == 2 and "METRIC=VALUE" in res.output
    res = CliRunner().invoke(main, ["monitor", "--target", "http://127.0.0.1:9", "--duration", "1"])
    assert res.exit_code == 2 and "cannot scrape" in res.output
