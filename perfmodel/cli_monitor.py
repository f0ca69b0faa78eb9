"""``perfmodel monitor`` and ``perfmodel detect``: score a recorded stream or watch a live server.

Registered on the main group by :mod:`perfmodel.cli`.
"""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import click

from .errors import PerfmodelError

__all__ = ["monitor_cmd", "detect_cmd", "register"]

_DETECTORS = ("point", "window", "threshold")


def _json(local: bool) -> bool:
    """The command's own ``--json`` or the root's (``perfmodel --json detect FILE`` had printed text)."""
    from .cli import _want_json

    return _want_json(click.get_current_context(), local)


def _expected(values: tuple[str, ...]) -> dict[str, float]:
    out: dict[str, float] = {}
    for v in values:
        name, sep, num = v.partition("=")
        try:
            out[name.strip()] = float(num)
        except ValueError:
            raise click.BadParameter(f"expected METRIC=VALUE, got {v!r}", param_hint="--expected") from None
        if not sep:
            raise click.BadParameter(f"expected METRIC=VALUE, got {v!r}", param_hint="--expected")
    return out


def _line(rec: dict[str, Any]) -> str:
    sc = rec.get("score")
    score = f"{sc:+.2f}" if isinstance(sc, float) and math.isfinite(sc) else "n/a"
    hint = rec["hint"]["sentence"] if isinstance(rec.get("hint"), dict) else rec.get("hint", "")
    return (f"[{rec['group']}] {rec['metric']} {rec['detector']} t={rec['start_timestamp_s']:.3f}.."
            f"{rec['end_timestamp_s']:.3f} score {score}: {hint}")


def _query(q: dict[str, Any]) -> dict[str, Any]:
    """The query options as canonical columns (catalog keys for hardware and model)."""
    import pandas as pd

    from .cli import _point_errors, _resolve_names

    row = {"hardware": q.get("hardware"), "model": q.get("model_name"), "framework": q.get("framework"),
           "device_count": q.get("device_count"), "input_len_tok": q.get("input_len"),
           "output_len_tok": q.get("output_len"), "batch_size": q.get("batch")}
    given = {k: v for k, v in row.items() if v is not None}
    with _point_errors():
        table = _resolve_names(pd.DataFrame([given]), "the command line")
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in table.iloc[0].to_dict().items()}


def _model_expectations(q: dict[str, Any], metric: str | None, stream_metrics: tuple[str, ...] | None
                        ) -> dict[str, float]:
    """``--expect-from`` / ``--model-dir``: the expected throughput for the query, keyed by metric."""
    expect_from, model_dir = q.get("expect_from"), q.get("model_dir")
    if expect_from is None and model_dir is None:
        return {}
    if expect_from is not None and model_dir is not None:
        raise click.UsageError("give one of --expect-from DATASET and --model-dir DIR")
    if q.get("batch") is None:
        raise click.UsageError("--expect-from/--model-dir need the deployment's --batch (concurrency)")
    if metric is None:
        from .monitor.streams import throughput_metrics

        tp = throughput_metrics(stream_metrics or ())
        if not tp:
            raise click.UsageError("the stream has no output-throughput column (output throughput or a server's "
                                   "generated-token rate): say which metric the expectation is for with "
                                   "--expect-metric METRIC")
        metric = tp[0]
    query = _query(q)
    from .monitor.expect import curve_for_query, expectation_from_curve, expectation_from_predictor

    if expect_from is not None:
        from .store import Store

        fit = curve_for_query(Store().runs(expect_from), query, source=expect_from)
        value = expectation_from_curve(fit, float(query["batch_size"]))
    else:
        from .cli import _point_errors
        from .models import load_predictor

        need = {"hardware": "--hardware", "model_name": "--model", "framework": "--framework",
                "input_len": "--input-len", "output_len": "--output-len"}
        missing = [opt for k, opt in need.items() if q.get(k) is None]
        if missing:
            raise click.UsageError("--model-dir needs the query's " + ", ".join(missing))
        row = dict(query)
        row.setdefault("device_count", 1)
        predictor = load_predictor(Path(str(model_dir)))
        with _point_errors():
            value = expectation_from_predictor(predictor, row)
    assert isinstance(value, float)
    return {metric: value}


def _stream(source: Path | str, group_col: str | None, command: str = "detect") -> tuple[Any, str]:
    """The stream to judge and its name: a recorded stream file as it is; a benchmark result file (a runs table
    any importer reads) or a stored dataset (by id or name) replayed one series per measurement, so that a
    sweep's batch sizes are not read as one series drifting (a canonical runs file had been one stream whose
    TTFT "changed +700%" as the batch grew).
    """
    from .errors import ImportFormatError
    from .importers import detect_format, read_result_file
    from .importers.base import Sample
    from .monitor import read_stream
    from .monitor.replay import replay_configurations
    from .store import Store

    path = Path(source)
    if path.is_file():
        if group_col is None:
            try:
                detect_format(Sample(path))
            except ImportFormatError:
                pass  # not a result file: a metric stream
            else:
                return (replay_configurations(read_result_file(path, command=command).runs, source=path.name),
                        path.name)
        return read_stream(path, group_col=group_col), path.name
    info = Store().dataset(str(source))  # NotFoundError names the known datasets
    return replay_configurations(Store().runs(info.id), source=f"dataset {info.name}"), f"dataset {info.name}"


def _score_file(file: Path | str, detector: str, metrics: tuple[str, ...], group_col: str | None, window: int,
                w: int, z: float, threshold: float, robust: bool, expected: tuple[str, ...], as_json: bool,
                q: dict[str, Any] | None = None, command: str = "detect") -> None:
    from .monitor import monitor_stream

    stream, name = _stream(file, group_col, command)
    for note in stream.notes:  # on stderr: a --json list on stdout stays one JSON document
        click.echo(f"warning: {note}.", err=True)
    exp: dict[str, float] = _model_expectations(q or {}, (q or {}).get("expect_metric"), stream.metrics)
    exp.update(_expected(expected))  # an explicit METRIC=VALUE wins
    rep = monitor_stream(stream, detector=detector, metrics=list(metrics) or None, window=window, w=w, z=z,
                         threshold_rel=threshold, robust=robust, expected=exp)
    recs = rep.records()
    if as_json:
        click.echo(json.dumps(recs, indent=2))
        return
    n = sum(len(stream.group_frame(g)) for g in stream.groups)
    click.echo(f"{name}: {n} samples, {len(stream.groups)} group(s), detector {detector}: "
               f"{len(recs)} alert(s) in {len(rep.incidents())} incident(s)")
    for m, v in exp.items():
        click.echo(f"expected {m}: {v:,.4g}")
    for r in recs:
        click.echo(_line(r))


def _check_target(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--target`` must be an http(s) base URL with a host (and a numeric port, if any)."""
    if value is None:
        return None
    example = "give the server's base URL, e.g. http://127.0.0.1:8000"
    try:
        parts = urllib.parse.urlsplit(value.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a valid URL; {example}", ctx, param) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise click.BadParameter(f"{value!r} is not an http:// or https:// URL with a host; {example}", ctx, param)
    return value.strip()


def _options(f: Any) -> Any:
    for opt in reversed([
        click.option("--detector", type=click.Choice(_DETECTORS), default="window", show_default=True),
        click.option("--metric", "metrics", multiple=True, help="Metric to judge (repeat; default throughput "
                     "and latency columns)."),
        click.option("--group-col", default=None, help="Column holding the group key (CSV/JSONL)."),
        click.option("--window", type=click.IntRange(min=2), default=1000, show_default=True,
                     help="Baseline length (samples)."),
        click.option("-w", "w", type=click.IntRange(min=1), default=10, show_default=True,
                     help="Samples averaged by the window detector."),
        click.option("--z", type=click.FloatRange(min=0, min_open=True), default=3.0, show_default=True,
                     help="Band half-width in standard deviations."),
        click.option("--threshold", type=click.FloatRange(0, 10, min_open=True), default=0.15, show_default=True,
                     help="Relative deviation for the threshold detector and cold start."),
        click.option("--robust", is_flag=True, help="Median/MAD baseline instead of mean/std."),
        click.option("--expected", multiple=True, metavar="METRIC=VALUE",
                     help="Expected value of a metric (threshold detector, cold start)."),
        click.option("--json", "as_json", is_flag=True, help="Print the alerts as a JSON list."),
        click.option("--expect-from", default=None, metavar="DATASET",
                     help="Expected throughput from the saturation curve of DATASET's configuration matching "
                          "the query options, at --batch."),
        click.option("--model-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
                     help="Expected throughput from a trained predictor (perfmodel train) for the query options."),
        click.option("--expect-metric", default=None, metavar="METRIC",
                     help="Metric the model's expectation applies to (default: the stream's output "
                          "throughput, or the server's generated-token rate)."),
        click.option("--hardware", default=None, help="Query: hardware name (catalog name or alias)."),
        click.option("--model", "model_name", default=None, help="Query: model name."),
        click.option("--framework", default=None, help="Query: framework."),
        click.option("--device-count", type=click.IntRange(min=1), default=None, help="Query: accelerators."),
        click.option("--input-len", type=click.FloatRange(min=0), default=None, help="Query: input tokens."),
        click.option("--output-len", type=click.FloatRange(min=0), default=None, help="Query: output tokens."),
        click.option("--batch", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="Query: batch size (concurrency) of the deployment."),
    ]):
        f = opt(f)
    return f


@click.command("detect")
@click.argument("file", metavar="FILE|DATASET")
@_options
def detect_cmd(file: str, detector: str, metrics: tuple[str, ...], group_col: str | None, window: int, w: int,
               z: float, threshold: float, robust: bool, expected: tuple[str, ...], as_json: bool,
               **query: Any) -> None:
    """Score a recorded metric stream FILE (CSV/JSONL samples, Prometheus dump, nvidia-smi log), or replay a
    benchmark result file or a stored DATASET (id or name) one series per measurement (configuration and load).

    Prints each anomaly with its group, start and end timestamp, detector, score and hint. The
    expected value of the threshold detector and of the cold start comes from --expected, or from a
    stored configuration's curve (--expect-from) or a trained predictor (--model-dir) for the query
    options (--hardware, --model, --framework, --device-count, --input-len, --output-len, --batch).
    """
    _score_file(file, detector, metrics, group_col, window, w, z, threshold, robust, expected, _json(as_json),
                query)


@click.command("monitor")
@click.argument("file", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--target", callback=_check_target, metavar="URL",
              help="Base URL of a running server (http://HOST:PORT); its /metrics is polled.")
@click.option("--interval", "interval_s", type=click.FloatRange(min=0.01), default=1.0, show_default=True,
              help="Seconds between scrapes (--target).")
@click.option("--duration", "duration_s", type=click.FloatRange(min=0), default=None,
              help="Stop after this many seconds (--target; default: until Ctrl-C).")
@click.option("--telemetry-period", "telemetry_period_s", type=click.FloatRange(min=0), default=0.05,
              show_default=True, help="--target: seconds between GPU (NVML) or host telemetry samples, "
                                      "aggregated per scrape into hw_ columns for the hints; 0 turns it off.")
@_options
def monitor_cmd(file: Path | None, target: str | None, interval_s: float, duration_s: float | None,
                telemetry_period_s: float, detector: str,
                metrics: tuple[str, ...], group_col: str | None, window: int, w: int, z: float, threshold: float,
                robust: bool, expected: tuple[str, ...], as_json: bool, **query: Any) -> None:
    """Monitor a recorded stream FILE, or a live server with --target URL (alerts printed as they happen)."""
    if (file is None) == (target is None):
        raise click.UsageError("give a FILE or --target URL (one of them)")
    if file is not None:
        _score_file(file, detector, metrics, group_col, window, w, z, threshold, robust, expected, _json(as_json),
                    query, command="monitor")
        return
    assert target is not None
    if (query.get("expect_from") or query.get("model_dir")) and not query.get("expect_metric"):
        raise click.UsageError("with --target, say which scraped metric the expectation is for (--expect-metric)")
    exp = _model_expectations(query, query.get("expect_metric"), None)
    exp.update(_expected(expected))
    _live(target, interval_s, duration_s, detector, metrics, window, w, z, threshold, robust, exp, _json(as_json),
          telemetry_period_s)


_OUTAGE_GIVE_UP_S = 60.0
"""A live monitor retries a server that stopped answering for this long (or ten intervals) before it stops."""


def _stamp(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def _live(target: str, interval_s: float, duration_s: float | None, detector: str, metrics: tuple[str, ...],
          window: int, w: int, z: float, threshold: float, robust: bool, expected: dict[str, float],
          as_json: bool, telemetry_period_s: float = 0.0) -> None:
    from collections import deque

    import pandas as pd

    from .monitor import PrometheusRates, make_detector
    from .monitor.hints import explain
    from .sweep.telemetry import TelemetrySampler

    def sampler() -> TelemetrySampler | None:
        # One sampler per scrape interval: its summary is the telemetry of that interval.
        period = min(telemetry_period_s, interval_s)
        return TelemetrySampler(period_s=max(period, 0.001)).start() if telemetry_period_s > 0 else None

    url = target.rstrip("/") + "/metrics"
    rates = PrometheusRates()
    dets: dict[tuple[str, str], Any] = {}
    # Recent samples per group (bounded), so an alert gets the same root-cause hints as a recorded stream.
    history: dict[str, deque[dict[str, Any]]] = {}
    t_end = None if duration_s is None else time.monotonic() + duration_s
    n_alerts = 0
    down_since: float | None = None  # first failed scrape of the current outage
    scraped = False
    give_up_s = max(_OUTAGE_GIVE_UP_S, 10 * interval_s)
    tele = sampler()
    try:
        while t_end is None or time.monotonic() < t_end:
            t0 = time.time()
            try:
                with urllib.request.urlopen(url, timeout=max(1.0, interval_s * 5)) as resp:  # noqa: S310
                    text = resp.read().decode("utf-8", "replace")
            except (urllib.error.URLError, OSError, ValueError) as exc:  # ValueError: a URL urllib rejects
                if not scraped:  # never reached: a wrong address rather than an outage
                    raise PerfmodelError(f"cannot scrape {url}: {exc}; is the server running and does it expose "
                                         "Prometheus metrics?") from exc
                # A server that answered before and stops (a restart, a crash) is reported and retried.
                if down_since is None:
                    down_since = t0
                    click.echo(f"{_stamp(t0)} scrape failed ({exc}): retrying every {interval_s:g} s for up to "
                               f"{give_up_s:g} s", err=True)
                elif t0 - down_since > give_up_s:
                    raise PerfmodelError(f"cannot scrape {url} for {t0 - down_since:.0f} s: {exc}") from exc
                time.sleep(max(0.0, interval_s - (time.time() - t0)))
                continue
            if down_since is not None:
                click.echo(f"{_stamp(t0)} scrape answered again after {t0 - down_since:.1f} s", err=True)
                down_since = None
            scraped = True
            try:
                rows = rates.feed(t0, text)
            except ValueError as exc:
                raise PerfmodelError(f"{url} did not answer in the Prometheus text format: {exc}") from exc
            hw: dict[str, float] = {}
            if tele is not None:
                tele.stop()
                hw = tele.summary()
                tele = sampler()
            for row in rows:
                row.update(hw)
                history.setdefault(row["group"], deque(maxlen=max(window, 60))).append(dict(row))
                for m, v in row.items():
                    # telemetry is context for the hints unless asked for by name
                    if m in ("timestamp_s", "group") or (metrics and m not in metrics) \
                            or (not metrics and m.startswith("hw_")):
                        continue
                    key = (row["group"], m)
                    if key not in dets:
                        dets[key] = make_detector(detector, window=window, w=w, z=z, threshold_rel=threshold,
                                                  robust=robust, expected=expected.get(m))
                    alert = dets[key].update(t0, v)
                    if alert is not None:
                        n_alerts += 1
                        frames = {g: pd.DataFrame(list(h)) for g, h in history.items()}
                        mine = frames.pop(row["group"])
                        hint = explain(mine, len(mine) - 1, len(mine) - 1, m, others=frames)
                        band = (f"{m} {alert.direction} ({alert.value:.4g} vs band "
                                f"[{alert.lower:.4g}, {alert.upper:.4g}])")
                        rec = {"group": row["group"], "metric": m, "detector": detector, "start_timestamp_s": t0,
                               "end_timestamp_s": t0, "score": alert.score, "value": alert.value,
                               "expected": alert.center, "causes": ",".join(hint.codes),
                               "hint": f"{band}: {hint.sentence}" if hint.sentence else band}
                        click.echo(json.dumps(rec) if as_json else _line(rec), nl=True)
            time.sleep(max(0.0, interval_s - (time.time() - t0)))
    except KeyboardInterrupt:
        pass
    finally:
        if tele is not None:
            tele.stop()
    if not as_json:
        click.echo(f"stopped: {n_alerts} alert(s)", err=True)


def register(group: click.Group) -> None:
    """Add ``monitor`` and ``detect`` to the main command group.

    Parameters
    ----------
    group
        The ``perfmodel`` click group.
    """
    group.add_command(monitor_cmd)
    group.add_command(detect_cmd)
