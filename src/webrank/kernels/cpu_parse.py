"""Kernel of the parallel edge-list parse (:mod:`webrank.io.edgelist`): the text of an
uncompressed edge list of integer ids, cut at line ends into ranges parsed in parallel
(C++ with OpenMP, ``native/parse.cpp``, compiled with the package).

It reads only the canonical form, ``digits DELIM digits`` and a line end (``\\n`` or
``\\r\\n``) on every line, ids of at most 18 digits; at anything else (a comment, a blank
line, a sign, a run of blanks, a third field...) it stops and says where, and the reader
hands the file to its general path. So it never decides what a line means differently
from the general reader; it only reads the common case faster (no intermediate strings,
bounds found on the way).
"""

from __future__ import annotations

import numpy as np

from webrank.kernels.native import lib, num_threads

__all__ = ["parse_id_pairs"]


def parse_id_pairs(buf: np.ndarray, cuts: np.ndarray, delim: int, first_slot: np.ndarray,
                   src: np.ndarray, dst: np.ndarray, parsed: np.ndarray,
                   bounds: np.ndarray) -> None:
    """Parse each range ``buf[cuts[r]:cuts[r + 1]]`` (ranges start at line starts) into
    ``src``/``dst`` (int32 or int64, both alike) from slot ``first_slot[r]`` on; an id
    past the columns' range is stored cut, and shows in ``bounds``.

    ``parsed[r]``: the edges of range r, or ``-1 - offset`` of the first byte outside
    the canonical form. ``bounds[r]``: the smallest and largest id of the range.
    """
    lib.parse_id_pairs(buf, np.ascontiguousarray(cuts, dtype=np.int64), int(delim),
                       np.ascontiguousarray(first_slot, dtype=np.int64), src, dst, parsed,
                       bounds, num_threads())
