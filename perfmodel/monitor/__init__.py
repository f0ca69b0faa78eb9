"""Monitor: streaming anomaly detectors on live or recorded inference metrics, with root-cause hints.

* :mod:`.streams` reads metric streams (CSV/JSONL samples, Prometheus dumps,
  nvidia-smi logs, a replayed sweep);
* :mod:`.detectors` holds the three detectors (dynamic point, dynamic window,
  fixed threshold), each streaming (``update``) and batch (``run``);
* :mod:`.hints` explains an anomaly (phase, telemetry, KV cache, queue, tensor
  parallel imbalance, noisy neighbour);
* :mod:`.core` runs a detector over a whole stream;
* :mod:`.evaluation` is the labelled benchmark (generator and scores);
* :mod:`.expect` gives the expected value from a fitted curve or a predictor.
"""

from __future__ import annotations

from .core import ALERT_COLUMNS, INCIDENT_COLUMNS, MonitorReport, expected_for_replay, monitor_stream
from .detectors import (
    DETECTORS,
    Alert,
    Detection,
    Detector,
    DetectorSettingsError,
    Event,
    PointDetector,
    ThresholdDetector,
    WindowDetector,
    make_detector,
)
from .expect import ExpectationError, curve_for_query, expectation_from_curve, expectation_from_predictor
from .hints import Cause, Hint, explain
from .streams import (
    STREAM_FORMATS,
    MetricStream,
    PrometheusRates,
    StreamFormatError,
    read_stream,
    read_stream_bytes,
    replay_dataset,
    replay_runs,
)

__all__ = [
    "ALERT_COLUMNS", "INCIDENT_COLUMNS", "MonitorReport", "expected_for_replay", "monitor_stream",
    "DETECTORS", "Alert", "Detection", "Detector", "DetectorSettingsError", "Event", "PointDetector",
    "ThresholdDetector", "WindowDetector", "make_detector",
    "ExpectationError", "curve_for_query", "expectation_from_curve", "expectation_from_predictor",
    "Cause", "Hint", "explain",
    "STREAM_FORMATS", "MetricStream", "PrometheusRates", "StreamFormatError", "read_stream", "read_stream_bytes",
    "replay_dataset", "replay_runs",
]
