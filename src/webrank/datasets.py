"""Graphs bundled with webrank (see ``webrank/data/README.md`` for provenance).

Examples
--------
>>> import webrank
>>> webrank.datasets.path().name
'web-NotreDame.txt.gz'
>>> g = webrank.load_dataset()  # doctest: +SKIP
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from webrank.graph import Graph

__all__ = ["BUNDLED", "load_dataset", "path"]

BUNDLED = {"web-NotreDame": "web-NotreDame.txt.gz"}


def path(name: str = "web-NotreDame") -> Path:
    """File path of a bundled graph (default: SNAP web-NotreDame, 325,729 pages)."""
    try:
        fname = BUNDLED[name]
    except KeyError:
        raise ValueError(f"no bundled graph {name!r}; have: {', '.join(BUNDLED)}") from None
    return Path(str(resources.files("webrank") / "data" / fname))


def load_dataset(name: str = "web-NotreDame", **options: Any) -> Graph:
    """A bundled graph, read as :func:`webrank.load` reads a file.

    Parameters
    ----------
    name : str, default "web-NotreDame"
        One of :data:`BUNDLED` (SNAP web-NotreDame: 325,729 pages, 1,497,134 links).
    **options
        Reading options of :func:`webrank.load` (``device="gpu"``, ``labels=``, ...).

    Returns
    -------
    Graph

    Examples
    --------
    >>> import webrank
    >>> g = webrank.load_dataset()
    >>> g.n, g.num_edges
    (325729, 1497134)
    """
    from webrank.io import load

    return load(path(name), **options)
