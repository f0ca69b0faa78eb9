"""A page's inputs in its URL, typed: read once per session into the widgets' state, written back on every run.

For pages whose inputs are plain widgets (Report, Sweeps, Monitor): a spec maps
each URL parameter to its widget key and default, the default's type (str,
int, float, bool, list of str) says how to read the parameter back. With the
inputs in the URL, :func:`perfmodel.ui.analyses.page_analysis` saves them as a
named analysis and ``?analysis=ID`` reopens them, like every other page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

__all__ = ["Spec", "Bounds", "restore", "write", "defaults", "settle", "read_link_value"]

Spec = Mapping[str, tuple[str, Any]]
"""URL parameter -> (widget key, default value)."""
Bounds = Mapping[str, tuple[float, float]]
"""URL parameter -> (smallest, largest) value its widget accepts."""

_CHECKED = "pagestate.{page}.checked"


def _parse(raw: list[str], default: Any) -> Any:
    """A URL value in the default's type, or None when it does not read as one (``inf`` and ``nan`` do not read
    as numbers: ``n_boot=inf`` had stopped the Curves page with an OverflowError, ``r2_min=nan`` flagged every
    fit)."""
    if isinstance(default, list):
        return list(raw)
    value = raw[0]
    try:
        if isinstance(default, bool):
            return {"true": True, "false": False, "1": True, "0": False}.get(value.lower())
        if isinstance(default, int | float):
            number = float(value)
            if not math.isfinite(number):
                return None
            return int(number) if isinstance(default, int) else number
    except (ValueError, OverflowError):
        return None
    return value


def _kind(default: Any) -> str:
    if isinstance(default, bool):
        return "true or false (1 or 0)"
    return "a whole number" if isinstance(default, int) else "a number"


def _shown(default: Any) -> str:
    return _text(default)[0] if _text(default) else "nothing"


def read_link_value(qp: str, raw: list[str], default: Any, bounds: Bounds | None = None) -> tuple[Any, str | None]:
    """One link value in its default's type, within its widget's bounds.

    Parameters
    ----------
    qp
        The URL parameter (for the message).
    raw
        Its values as the URL gives them.
    default
        The widget's default (its type says how to read the value).
    bounds
        URL parameter -> (smallest, largest) allowed.

    Returns
    -------
    (value, message)
        The value, or None and why it is not used, naming the parameter, the value and what is shown instead
        (``n_boot='100000' is not a whole number from 10 to 2,000: showing 200``). An out-of-range value had
        been moved to the widget's minimum without a word.
    """
    value = _parse(raw, default)
    lo, hi = (bounds or {}).get(qp, (-math.inf, math.inf))
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or lo <= value <= hi):
        return value, None
    span = ("" if math.isinf(lo) and math.isinf(hi) else f" of at least {lo:,g}" if math.isinf(hi)
            else f" of at most {hi:,g}" if math.isinf(lo) else f" from {lo:,g} to {hi:,g}")
    return None, f"{qp}={raw[0]!r} is not {_kind(default)}{span}: showing {_shown(default)}"


def _text(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, float) and value.is_integer():
        return [f"{value:g}"]
    return [str(value)]


def defaults(spec: Spec) -> None:
    """Give every widget of the spec its default unless the session already has a value.

    Widgets then take their value from the session state only (a widget given
    both a default and a state value makes Streamlit warn).

    Parameters
    ----------
    spec
        URL parameter -> (widget key, default).
    """
    for key, default in spec.values():
        if key not in st.session_state:
            st.session_state[key] = list(default) if isinstance(default, list) else default


def settle(key: str, options: Sequence[Any], default: Any, *, what: str | None = None) -> None:
    """Give a choice widget ``default`` when its state is none of ``options`` (nothing yet, or a link's value
    that this dataset does not offer), before the widget is drawn.

    For choices whose default depends on the data (the Data page's x axis and colour), which a widget's
    ``index`` cannot give once the state may hold a value from the URL.

    Parameters
    ----------
    key
        The widget key.
    options
        The options the widget is about to get.
    default
        The value to fall back on.
    what
        The choice in words; when given, a value that is replaced (a link's, or one the other inputs no longer
        offer) is named in a warning rather than replaced silently.
    """
    old = st.session_state.get(key)
    if old not in options:
        st.session_state[key] = default
        if what and old not in (None, ""):
            st.warning(f"The {what} {old!r} is not among the choices here; showing {default!r} instead.",
                       icon=":material/link_off:")


def restore(page: str, spec: Spec, bounds: Bounds | None = None, *, warn: bool = True) -> list[str]:
    """On the session's first run of the page, put the URL's values into the widgets' state.

    Parameters
    ----------
    page
        The page's name (keys the once-per-session flag).
    spec
        URL parameter -> (widget key, default).
    bounds
        URL parameter -> (smallest, largest) value its widget accepts; a value outside is not used.
    warn
        Show one warning per value not used (:func:`read_link_value`'s message).

    Returns
    -------
    list of str
        Why each value not used was not (left at its default).
    """
    flag = _CHECKED.format(page=page)
    if st.session_state.get(flag):
        return []
    st.session_state[flag] = True
    bad = []
    for qp, (key, default) in spec.items():
        raw = [str(v) for v in st.query_params.get_all(qp)]
        if not raw:
            continue
        value, why = read_link_value(qp, raw, default, bounds)
        if why is not None:
            bad.append(why)
            continue
        st.session_state[key] = value
    if warn:
        for why in bad:
            st.warning(why, icon=":material/link_off:")
    return bad


def write(spec: Spec, values: Mapping[str, Any] | None = None) -> None:
    """Put the page's inputs in the URL when they changed (other parameters, such as ``analysis``, stay).

    Parameters
    ----------
    spec
        URL parameter -> (widget key, default).
    values
        URL parameter -> value, for inputs to take from elsewhere than the
        widget's state (e.g. a form's value that is only committed on submit).
    """
    values = values or {}
    wanted = {qp: _text(values[qp] if qp in values else st.session_state.get(key)) for qp, (key, _) in spec.items()}
    wanted = {k: v for k, v in wanted.items() if v}
    current = {k: [str(v) for v in st.query_params.get_all(k)] for k in st.query_params.keys() if k in spec}
    if current == wanted:
        return  # writing an unchanged URL would still send a message to the browser
    for k in set(current) - set(wanted):
        del st.query_params[k]
    for k, vals in wanted.items():
        if current.get(k) != vals:
            st.query_params[k] = vals if len(vals) > 1 else vals[0]
