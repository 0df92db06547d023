"""Graphs bundled with webrank (see ``webrank/data/README.md`` for provenance).

Examples
--------
>>> import webrank
>>> webrank.datasets.path().name
'web-NotreDame.txt.gz'
>>> g = webrank.load(webrank.datasets.path())  # doctest: +SKIP
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["BUNDLED", "path"]

BUNDLED = {"web-NotreDame": "web-NotreDame.txt.gz"}


def path(name: str = "web-NotreDame") -> Path:
    """File path of a bundled graph (default: SNAP web-NotreDame, 325,729 pages)."""
    try:
        fname = BUNDLED[name]
    except KeyError:
        raise ValueError(f"no bundled graph {name!r}; have: {', '.join(BUNDLED)}") from None
    return Path(str(resources.files("webrank") / "data" / fname))
