"""Thresholds and the values said beside them are never rounded into another value (the Attribution page had
printed "Spearman |ρ| ≥ 1.00" where the bar is 0.99)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from perfmodel import explain as E
from perfmodel.ui import explain as X


def test_a_threshold_reads_as_set() -> None:
    assert X.threshold_text(0.99) == "0.99" and X.threshold_text(0.995) == "0.995"
    assert X.threshold_text(-1.0) == "-1" and X.threshold_text(0.9999) == "0.9999"


def test_a_value_beside_its_threshold_is_not_rounded_onto_or_across_it() -> None:
    assert X.beside_threshold(-3.2, -1.0) == "-3.20"
    assert X.beside_threshold(-1.004, -1.0) == "-1.004"  # ":.2f" had read -1.00 under "R² below -1"
    assert X.beside_threshold(-1.0000004, -1.0) == "-1.0000004"
    assert X.beside_threshold(0.9896, 0.99) == "0.9896"  # not 0.99, which meets the bar
    assert X.beside_threshold(0.99999, 0.99) == "1.00"  # above the bar, and still reads above it


class _Together:
    """An explanation whose one group of features has the given smallest |ρ|, at the bar it is asked for."""

    def __init__(self, min_rho: float) -> None:
        self.min_rho = min_rho

    def read_together(self, features: Sequence[str], *, min_rho: float = E.READ_TOGETHER_RHO,
                      min_rows: int = 10) -> list[E.ReadTogether]:
        return [E.ReadTogether(features=("batch_size", "log2_bb"), min_rho=self.min_rho, n_rows=337,
                               missing={})]


def test_read_together_notes_state_the_bar_not_the_groups_rounded_rho() -> None:
    # batch size and log2(batch) order the rows identically: their |ρ| of 1.0 had been printed as the bar.
    imp = pd.DataFrame({"feature": ["batch_size", "log2_bb"], "share": [0.3, 0.16]})
    for rho in (1.0, 0.9996, 0.991):
        [note] = X.read_together_notes(_Together(rho), imp)  # type: ignore[arg-type]
        assert f"(Spearman |ρ| ≥ {X.threshold_text(E.READ_TOGETHER_RHO)} where both have a value)" in note, note
        assert "1.00" not in note and "(46%)" in note


def test_a_failing_r2_just_under_the_bar_is_not_shown_at_it() -> None:
    t = pd.DataFrame({"set": ["all"], "learner": ["poly"], "n_test": [10], "r2_log": [0.879], "r2": [-1.004]})
    assert X.split_comparison(t)[2] == ["all / poly (R² (linear) -1.004)"]
