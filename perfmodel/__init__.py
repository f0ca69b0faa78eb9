"""perfmodel: predict, explain and monitor LLM inference throughput.

The public API is re-exported here lazily so that ``import perfmodel`` stays cheap.
"""

from __future__ import annotations

from .errors import PerfmodelError

__version__ = "0.1.0"
__all__ = ["PerfmodelError", "__version__"]
