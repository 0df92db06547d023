"""Numba kernel of the parallel edge-list parse (:mod:`webrank.io.edgelist`): the text of
an uncompressed edge list of integer ids, cut at line ends into ranges parsed in parallel.

It reads only the canonical form, ``digits DELIM digits`` and a line end (``\\n`` or
``\\r\\n``) on every line, ids of at most 18 digits; at anything else (a comment, a blank
line, a sign, a run of blanks, a third field...) it stops and says where, and the reader
hands the file to its general path. So it never decides what a line means differently
from the general reader; it only reads the common case faster (no intermediate strings,
bounds found on the way).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_MAX_DIGITS = 18  # below 10**18 < 2**63: no overflow check per digit


@njit(inline="always")
def _number(buf, p, end):  # pragma: no cover - compiled
    """The decimal number at ``buf[p:]``: ``(value, digits, position after it)``."""
    v = np.int64(0)
    nd = 0
    while p < end:
        c = buf[p]
        if c < 48 or c > 57:
            break
        v = v * 10 + (c - 48)
        nd += 1
        p += 1
    return v, nd, p


@njit(parallel=True, cache=True)
def parse_id_pairs(buf, cuts, delim, first_slot, src, dst, parsed,
                   bounds):  # pragma: no cover - compiled
    """Parse each range ``buf[cuts[r]:cuts[r + 1]]`` (ranges start at line starts) into
    ``src``/``dst`` from slot ``first_slot[r]`` on.

    ``parsed[r]``: the edges of range r, or ``-1 - offset`` of the first byte outside
    the canonical form. ``bounds[r]``: the smallest and largest id of the range.
    """
    for r in prange(cuts.size - 1):
        p = cuts[r]
        end = cuts[r + 1]
        o = first_slot[r]
        lo = np.int64(2**62)
        hi = np.int64(-1)
        bad = np.int64(-1)
        while p < end:
            a, nd, p = _number(buf, p, end)
            if nd == 0 or nd > _MAX_DIGITS or p >= end or buf[p] != delim:
                bad = p
                break
            b, nd, p = _number(buf, p + 1, end)
            if nd == 0 or nd > _MAX_DIGITS:
                bad = p
                break
            if p < end and buf[p] == 13:  # \r\n
                p += 1
            if p < end:
                if buf[p] != 10:
                    bad = p
                    break
                p += 1
            src[o] = a
            dst[o] = b
            o += 1
            lo = min(lo, min(a, b))
            hi = max(hi, max(a, b))
        parsed[r] = o - first_slot[r] if bad < 0 else -1 - bad
        bounds[r, 0] = lo
        bounds[r, 1] = hi
