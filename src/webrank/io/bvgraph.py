"""Sequential decoder for LAW WebGraph ``BVGraph`` files (no ``.offsets`` file needed).

A BVGraph named ``BASENAME`` is stored as two files:

``BASENAME.properties``
    Java properties (``key=value``, ``#``/``!`` comments) describing the graph: ``nodes``,
    ``arcs``, ``windowsize``, ``minintervallength``, ``zetak`` (default 3),
    ``compressionflags`` (empty for the defaults, or names such as
    ``OUTDEGREES_GAMMA|RESIDUALS_ZETA`` separated by ``|``), ``version`` (must be 0) and
    ``graphclass`` (``it.unimi.dsi.webgraph.BVGraph``; some files use the key ``class``).
    Statistics (``bitsperlink``, ``avgref``, ...) and ``maxrefcount`` do not matter for
    decoding.

``BASENAME.graph``
    One bit stream, read most-significant bit first, holding the successor lists of nodes
    ``0 .. nodes-1`` one after the other. For node ``x``:

    1. outdegree ``d`` (default code: gamma). If ``d == 0`` the list ends here.
    2. if ``windowsize > 0``: reference ``r`` (default: unary), ``0 <= r <= windowsize``;
       ``r > 0`` means that the list of ``x`` is described as a copy of parts of the list of
       ``x - r``.
    3. if ``r > 0``: block count ``b`` (default: gamma) and ``b`` block lengths (default:
       gamma; every block but the first is stored decremented by one). Blocks alternately
       copy and skip consecutive runs of the referenced list, starting with a copy block;
       after the last explicit block the rest of the referenced list is copied if ``b`` is
       even, and skipped if ``b`` is odd.
    4. if some successors are still missing ("extra" successors) and
       ``minintervallength > 0``: interval count (gamma), then for each interval its left
       extreme and its length minus ``minintervallength`` (both gamma). The first left
       extreme is stored as ``int2nat(left - x)`` (zig-zag: 0, -1, 1, -2, ... map to 0, 1,
       2, 3, ...); each following one as ``left - previous_right - 2``.
    5. the remaining extra successors are residuals (default code: zeta_k with
       ``k = zetak``): the first is stored as ``int2nat(residual - x)``, each following one
       as ``residual - previous_residual - 1``.

    The successor list is the (disjoint) merge of the copied successors, the interval
    successors and the residuals, in increasing order.

    The codes are those of ``it.unimi.dsi.io.InputBitStream`` (dsiutils), all for natural
    numbers ``n >= 0``: unary (``n`` zeros then a one), gamma (``n + 1`` in binary without its
    leading one, preceded by the unary code of its length), delta (as gamma, but the length
    is gamma-coded), zeta_k (Boldi & Vigna), Golomb with modulus ``zetak`` (unary quotient,
    minimal binary remainder) and variable-length nibbles (groups of one stop bit, 0 meaning
    "more follow", and three value bits).

Supported: every compression flag that ``BVGraph`` accepts, i.e. ``OUTDEGREES_{GAMMA,DELTA}``,
``BLOCKS_{GAMMA,DELTA}``, ``RESIDUALS_{GAMMA,DELTA,ZETA,GOLOMB,NIBBLE}``,
``REFERENCES_{GAMMA,DELTA,UNARY}``, ``BLOCK_COUNT_{GAMMA,DELTA,UNARY}`` and
``OFFSETS_{GAMMA,DELTA}`` (ignored: the offsets file is not read). Both
``it.unimi.dsi.webgraph.BVGraph`` and ``it.unimi.dsi.big.webgraph.BVGraph`` files are read
(the format is the same). Not supported: other graph classes (e.g. ``EFGraph``, labelled
graphs), format versions other than 0, random access (use the Java library for that).

The decoder is a plain Python function compiled with Numba (``njit(cache=True)``) when
Numba is available, and run as (slow but correct) plain Python otherwise. It decodes the
whole graph in one sequential pass, writing successors straight into output arrays
pre-allocated from the ``arcs`` property; copy references read the earlier lists back from
that output through per-node start offsets. The result is two int64 arrays (``src``
non-decreasing, each node's successors strictly increasing) and the number of nodes.

Every problem raises :class:`webrank.errors.GraphFormatError` naming the file: a missing
file, a missing or malformed property, an unknown graph class, version or compression flag,
data ending before the last successor list (truncation), and corrupt data (a reference
outside the window, copy blocks or intervals not fitting the outdegree, a successor outside
``[0, nodes)``, a repeated successor, or an arc count different from ``arcs``). Corrupt
input never makes the decoder read or write outside its buffers.

References
----------
* P. Boldi and S. Vigna, "The WebGraph Framework I: Compression Techniques", WWW 2004.
* ``it.unimi.dsi.webgraph.BVGraph`` (https://webgraph.di.unimi.it/) and
  ``it.unimi.dsi.io.InputBitStream`` (https://dsiutils.di.unimi.it/).
* Laboratory for Web Algorithmics data sets: https://law.di.unimi.it/datasets.php
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from webrank.errors import GraphFormatError

__all__ = ["read_bvgraph"]

# --------------------------------------------------------------------------------------
# Numba (optional)
# --------------------------------------------------------------------------------------

try:  # pragma: no cover - exercised by the environment, not by branches
    import numba
    from llvmlite import ir as _llvm_ir
    from numba import types as _nb_types
    from numba.extending import intrinsic as _nb_intrinsic

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    numba = None
    HAVE_NUMBA = False


def _jit(fn):
    """``numba.njit(cache=True)`` when Numba is importable, the function itself otherwise."""
    if HAVE_NUMBA:
        return numba.njit(cache=True, nogil=True)(fn)
    return fn


if HAVE_NUMBA:

    @_nb_intrinsic
    def _clz64(typingctx, x):
        """Leading zeros of a 64-bit integer (64 for 0), via LLVM's ``ctlz``."""
        if not isinstance(x, _nb_types.Integer) or x.bitwidth != 64:
            return None
        sig = _nb_types.int64(x)

        def codegen(context, builder, signature, args):
            return builder.ctlz(args[0], _llvm_ir.Constant(_llvm_ir.IntType(1), 0))

        return sig, codegen

    @_nb_intrinsic
    def _load_be56(typingctx, addr):
        """The first 56 bits of the 8 bytes at address ``addr``, read big-endian (>= 0)."""
        if not isinstance(addr, _nb_types.Integer) or addr.bitwidth != 64:
            return None
        sig = _nb_types.int64(addr)

        def codegen(context, builder, signature, args):
            i64 = _llvm_ir.IntType(64)
            ptr = builder.inttoptr(args[0], i64.as_pointer())
            word = builder.bswap(builder.load(ptr, align=1))
            return builder.lshr(word, _llvm_ir.Constant(i64, 8))

        return sig, codegen

else:  # pragma: no cover
    import ctypes

    def _clz64(x):
        return 64 - int(x).bit_length()

    def _load_be56(addr):
        return int.from_bytes(ctypes.string_at(int(addr), 8), "big") >> 8


# Coding identifiers, as in it.unimi.dsi.webgraph.CompressionFlags.
DELTA = 1
GAMMA = 2
GOLOMB = 3
SKEWED_GOLOMB = 4
UNARY = 5
ZETA = 6
NIBBLE = 7

_CODE_NAMES = {
    "DELTA": DELTA,
    "GAMMA": GAMMA,
    "GOLOMB": GOLOMB,
    "UNARY": UNARY,
    "ZETA": ZETA,
    "NIBBLE": NIBBLE,
}

# Which codes BVGraph accepts for each component (the names of its *_XXX flag fields).
_COMPONENT_CODES = {
    "OUTDEGREES": (GAMMA, DELTA),
    "BLOCKS": (GAMMA, DELTA),
    "RESIDUALS": (GAMMA, ZETA, DELTA, NIBBLE, GOLOMB),
    "REFERENCES": (GAMMA, DELTA, UNARY),
    "BLOCK_COUNT": (GAMMA, DELTA, UNARY),
    "OFFSETS": (GAMMA, DELTA),
}
_DEFAULT_CODES = {
    "OUTDEGREES": GAMMA,
    "BLOCKS": GAMMA,
    "RESIDUALS": ZETA,
    "REFERENCES": UNARY,
    "BLOCK_COUNT": GAMMA,
    "OFFSETS": GAMMA,
}

_GRAPH_CLASSES = (
    "it.unimi.dsi.webgraph.BVGraph",
    "it.unimi.dsi.big.webgraph.BVGraph",
    "BVGraph",
)

# A value no valid code yields: decoders return it for over-long (corrupt) codes, so the
# range checks of the decode loop reject it instead of overflowing.
_INVALID = 1 << 62

# Error codes returned by _decode.
_OK = 0
_E_TOO_MANY_ARCS = 1
_E_BAD_REFERENCE = 2
_E_BAD_BLOCKS = 3
_E_BAD_INTERVALS = 4
_E_OUT_OF_RANGE = 5
_E_NOT_INCREASING = 6
_E_TOO_FEW_ARCS = 7
_E_TRUNCATED = 8


# --------------------------------------------------------------------------------------
# Bit reader. The stream is the file's bytes followed by 8 zero bytes, at address ``ptr``
# (``nbytes`` bytes in all, ``nbits`` bits of data); ``pos`` is a bit position, bits are
# read most-significant first. Every reader returns (value, new_pos). Reading past the end
# of the data yields zeros and never touches memory outside the buffer; the caller detects
# it by comparing the final position with ``nbits``.
#
# The readers take the buffer's address rather than the array: Numba reference-counts
# array arguments on every call, which would cost more than the decoding itself.
# --------------------------------------------------------------------------------------


@_jit
def _window(ptr, nbytes, pos):
    """The 56 bits from byte ``pos >> 3`` as a non-negative int64, and ``pos & 7``.

    Bits before ``pos`` are cleared, so ``56 - (pos & 7) >= 49`` bits are valid.
    """
    b = pos >> 3
    s = pos & 7
    if b + 8 <= nbytes:
        w = _load_be56(ptr + b)
    else:  # past the data and its zero padding: only zeros left
        w = np.int64(0)
    w &= (np.int64(1) << (56 - s)) - 1
    return w, s


@_jit
def _read_int(ptr, nbytes, pos, n):
    """``n``-bit unsigned integer, 0 <= n <= 62."""
    v = np.int64(0)
    while n > 0:
        c = n if n <= 48 else 48
        w, s = _window(ptr, nbytes, pos)
        v = (v << c) | (w >> (56 - s - c))
        pos += c
        n -= c
    return v, pos


@_jit
def _read_unary(ptr, nbytes, pos, nbits):
    """Number of zeros before the next one (stops, returning a huge count, past the end)."""
    x = np.int64(0)
    while True:
        w, s = _window(ptr, nbytes, pos)
        if w != 0:
            z = _clz64(w) - 8 - s
            return x + z, pos + z + 1
        x += 56 - s
        pos += 56 - s
        if pos > nbits + 64:
            return x, pos


@_jit
def _read_gamma(ptr, nbytes, pos, nbits):
    w, s = _window(ptr, nbytes, pos)
    if w != 0:
        z = _clz64(w) - 8 - s  # leading zeros = bits after the implicit leading one
        ln = 2 * z + 1
        if ln <= 56 - s:
            return (w >> (56 - s - ln)) - 1, pos + ln
    msb, pos = _read_unary(ptr, nbytes, pos, nbits)
    if msb > 62:
        return np.int64(_INVALID), pos + 62
    v, pos = _read_int(ptr, nbytes, pos, msb)
    return ((np.int64(1) << msb) | v) - 1, pos


@_jit
def _read_delta(ptr, nbytes, pos, nbits):
    msb, pos = _read_gamma(ptr, nbytes, pos, nbits)
    if msb > 62:
        return np.int64(_INVALID), pos + 62
    v, pos = _read_int(ptr, nbytes, pos, msb)
    return ((np.int64(1) << msb) | v) - 1, pos


@_jit
def _read_zeta(ptr, nbytes, pos, nbits, k):
    h, pos = _read_unary(ptr, nbytes, pos, nbits)
    if h > 62 or h * k + k - 1 > 61:
        return np.int64(_INVALID), pos + 62
    left = np.int64(1) << (h * k)
    m, pos = _read_int(ptr, nbytes, pos, h * k + k - 1)
    if m < left:
        return m + left - 1, pos
    b, pos = _read_int(ptr, nbytes, pos, 1)
    return (m << 1) + b - 1, pos


@_jit
def _read_nibble(ptr, nbytes, pos, nbits):
    x = np.int64(0)
    for _ in range(21):
        w, pos = _read_int(ptr, nbytes, pos, 4)
        x = (x << 3) | (w & 7)
        if w >= 8:
            return x, pos
    return np.int64(_INVALID), pos


@_jit
def _read_golomb(ptr, nbytes, pos, nbits, b):
    if b == 0:
        return np.int64(0), pos
    q, pos = _read_unary(ptr, nbytes, pos, nbits)
    if q > (np.int64(1) << 61) // b:
        return np.int64(_INVALID), pos
    # minimal binary code of the remainder, 0 <= r < b
    log2b = 63 - _clz64(np.int64(b))
    m = (np.int64(1) << (log2b + 1)) - b
    x, pos = _read_int(ptr, nbytes, pos, log2b)
    if x >= m:
        bit, pos = _read_int(ptr, nbytes, pos, 1)
        x = (x << 1) + bit - m
    return q * b + x, pos


@_jit
def _read_code(ptr, nbytes, pos, nbits, code, k):
    if code == GAMMA:
        return _read_gamma(ptr, nbytes, pos, nbits)
    if code == ZETA:
        return _read_zeta(ptr, nbytes, pos, nbits, k)
    if code == UNARY:
        return _read_unary(ptr, nbytes, pos, nbits)
    if code == DELTA:
        return _read_delta(ptr, nbytes, pos, nbits)
    if code == NIBBLE:
        return _read_nibble(ptr, nbytes, pos, nbits)
    return _read_golomb(ptr, nbytes, pos, nbits, k)


@_jit
def _nat2int(v):
    return (v >> 1) ^ -(v & 1)


# --------------------------------------------------------------------------------------
# Decode loop
# --------------------------------------------------------------------------------------


@_jit
def _decode(
    buf,
    nbits,
    n,
    m,
    window,
    minint,
    k,
    out_code,
    ref_code,
    blkcnt_code,
    blk_code,
    res_code,
    src,
    dst,
    start,
):
    """Decode all successor lists into ``src``/``dst`` (length ``m``) and ``start`` (n + 1).

    Returns ``(error, node, value, arcs_written, bit_position)``; ``error == 0`` on success.
    """
    ptr = np.int64(buf.ctypes.data)
    nbytes = buf.shape[0]
    pos = np.int64(0)
    out = np.int64(0)
    cap = 64
    s_copy = np.empty(cap + 1, np.int64)
    s_int = np.empty(cap + 1, np.int64)
    s_res = np.empty(cap + 1, np.int64)
    big = np.int64(1) << 62  # sentinel, larger than any node

    for x in range(n):
        start[x] = out
        d, pos = _read_code(ptr, nbytes, pos, nbits, out_code, k)
        if pos > nbits:
            return _E_TRUNCATED, x, 0, out, pos
        if d == 0:
            continue
        if d > m - out:
            return _E_TOO_MANY_ARCS, x, d, out, pos
        if d > cap:
            cap = max(d, 2 * cap)
            s_copy = np.empty(cap + 1, np.int64)
            s_int = np.empty(cap + 1, np.int64)
            s_res = np.empty(cap + 1, np.int64)

        # ---- copied successors (reference + copy blocks)
        ncopy = 0
        ref = 0
        if window > 0:
            ref, pos = _read_code(ptr, nbytes, pos, nbits, ref_code, k)
            if ref > window or ref > x:
                return _E_BAD_REFERENCE, x, ref, out, pos
        if ref > 0:
            rs = start[x - ref]
            re = start[x - ref + 1]
            nblocks, pos = _read_code(ptr, nbytes, pos, nbits, blkcnt_code, k)
            if nblocks > re - rs + 1:
                return _E_BAD_BLOCKS, x, nblocks, out, pos
            idx = rs
            copying = True
            for i in range(nblocks):
                bl, pos = _read_code(ptr, nbytes, pos, nbits, blk_code, k)
                if i > 0:
                    bl += 1
                if bl > re - idx:
                    return _E_BAD_BLOCKS, x, bl, out, pos
                if copying:
                    if ncopy + bl > d:
                        return _E_BAD_BLOCKS, x, bl, out, pos
                    for j in range(bl):
                        s_copy[ncopy + j] = dst[idx + j]
                    ncopy += bl
                idx += bl
                copying = not copying
            if copying:  # even block count: the rest of the referenced list is copied
                bl = re - idx
                if ncopy + bl > d:
                    return _E_BAD_BLOCKS, x, bl, out, pos
                for j in range(bl):
                    s_copy[ncopy + j] = dst[idx + j]
                ncopy += bl
        s_copy[ncopy] = big
        extra = d - ncopy

        # ---- intervals
        nint = 0
        if extra > 0 and minint > 0:
            nintervals, pos = _read_gamma(ptr, nbytes, pos, nbits)
            if nintervals > 0:
                if nintervals > extra // minint:
                    return _E_BAD_INTERVALS, x, nintervals, out, pos
                prev = np.int64(0)
                for i in range(nintervals):
                    v, pos = _read_gamma(ptr, nbytes, pos, nbits)
                    if i == 0:
                        left = x + _nat2int(v)
                    else:
                        left = prev + v + 1
                    ln, pos = _read_gamma(ptr, nbytes, pos, nbits)
                    ln += minint
                    if ln > extra - nint:
                        return _E_BAD_INTERVALS, x, ln, out, pos
                    if left < 0 or left > n - ln:
                        return _E_OUT_OF_RANGE, x, left, out, pos
                    for j in range(ln):
                        s_int[nint + j] = left + j
                    nint += ln
                    prev = left + ln
        s_int[nint] = big

        # ---- residuals
        nres = extra - nint
        if nres > 0:
            v, pos = _read_code(ptr, nbytes, pos, nbits, res_code, k)
            r = x + _nat2int(v)
            if r < 0 or r >= n:
                return _E_OUT_OF_RANGE, x, r, out, pos
            s_res[0] = r
            for i in range(1, nres):
                v, pos = _read_code(ptr, nbytes, pos, nbits, res_code, k)
                r += v + 1
                if r >= n:
                    return _E_OUT_OF_RANGE, x, r, out, pos
                s_res[i] = r
        s_res[nres] = big

        # ---- merge the three increasing lists
        if nint + nres == 0 or ncopy + nint == 0:
            # a single list, increasing by construction
            only = s_copy if nint + nres == 0 else s_res
            for t in range(d):
                dst[out + t] = only[t]
                src[out + t] = x
            out += d
            if pos > nbits:
                return _E_TRUNCATED, x, 0, out, pos
            continue
        i = 0
        j = 0
        q = 0
        last = np.int64(-1)
        for t in range(d):
            a = s_copy[i]
            b = s_int[j]
            c = s_res[q]
            if a <= b and a <= c:
                val = a
                i += 1
            elif b <= c:
                val = b
                j += 1
            else:
                val = c
                q += 1
            if val <= last:
                return _E_NOT_INCREASING, x, val, out, pos
            last = val
            dst[out + t] = val
            src[out + t] = x
        out += d
        if pos > nbits:
            return _E_TRUNCATED, x, 0, out, pos

    start[n] = out
    if out != m:
        return _E_TOO_FEW_ARCS, n, out, out, pos
    return _OK, n, 0, out, pos


# --------------------------------------------------------------------------------------
# Properties and the Python entry point
# --------------------------------------------------------------------------------------

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt == "u" and i + 6 <= len(s):
                try:
                    out.append(chr(int(s[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (comments, ``=``/``:``/blank separators,
    line continuations and backslash escapes) into a dict."""
    props: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    ws = " \t\f"
    while i < len(lines):
        line = lines[i].lstrip(ws)
        i += 1
        if not line or line[0] in "#!":
            continue
        # continuation: an odd number of trailing backslashes
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1:
            line = line[:-1]
            if i >= len(lines):
                break
            line += lines[i].lstrip(ws)
            i += 1
        # key ends at the first unescaped '=', ':' or whitespace
        j = 0
        while j < len(line):
            c = line[j]
            if c == "\\":
                j += 2
                continue
            if c in "=:" or c in ws:
                break
            j += 1
        key = line[:j]
        rest = line[j:].lstrip(ws)
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(ws)
        props[_unescape(key)] = _unescape(rest)
    return props


def _basename(path) -> str:
    p = os.fspath(path)
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    for ext in (".graph", ".properties"):
        if p.endswith(ext):
            return p[: -len(ext)]
    return p


def _parse_flags(flags: str, prop_path: str) -> dict[str, int]:
    codes = dict(_DEFAULT_CODES)
    for raw in flags.split("|"):
        name = raw.strip()
        if not name:
            continue
        comp, _, code_name = name.rpartition("_")
        code = _CODE_NAMES.get(code_name)
        if comp not in _COMPONENT_CODES or code not in _COMPONENT_CODES[comp]:
            raise GraphFormatError(
                f"unsupported BVGraph compression flag {name!r} (supported: "
                "OUTDEGREES_{GAMMA,DELTA}, BLOCKS_{GAMMA,DELTA}, "
                "RESIDUALS_{GAMMA,DELTA,ZETA,GOLOMB,NIBBLE}, REFERENCES_{GAMMA,DELTA,UNARY}, "
                "BLOCK_COUNT_{GAMMA,DELTA,UNARY}, OFFSETS_{GAMMA,DELTA})",
                path=prop_path,
            )
        codes[comp] = code
    return codes


def _int_property(
    props: dict[str, str], key: str, prop_path: str, default: int | None = None, minimum: int = 0
) -> int:
    raw = props.get(key)
    if raw is None or raw.strip() == "":
        if default is not None:
            return default
        raise GraphFormatError(f"missing BVGraph property {key!r}", path=prop_path)
    try:
        value = int(raw.strip())
    except ValueError:
        raise GraphFormatError(
            f"BVGraph property {key!r} is not an integer", path=prop_path, text=raw
        ) from None
    if value < minimum:
        raise GraphFormatError(
            f"BVGraph property {key!r} must be >= {minimum}", path=prop_path, text=raw
        )
    return value


def read_bvgraph(path) -> tuple[np.ndarray, np.ndarray, int]:
    """Decode BASENAME.graph + BASENAME.properties (a WebGraph ``BVGraph``, version 0).

    Parameters
    ----------
    path : str or os.PathLike
        The basename, ``BASENAME.graph`` or ``BASENAME.properties``.

    Returns
    -------
    src, dst : numpy.ndarray of int64
        The arcs in the file's order: ``src`` non-decreasing, the successors of each node
        strictly increasing (as BVGraph stores them).
    num_nodes : int
        The ``nodes`` property.

    Raises
    ------
    GraphFormatError
        A file is missing, the properties are invalid or name an unsupported graph class,
        format version or compression flag, or the bit stream is truncated or corrupt
        (e.g. a successor out of range, or an arc count different from ``arcs``).
    """
    base = _basename(path)
    prop_path = base + ".properties"
    graph_path = base + ".graph"

    try:
        text = Path(prop_path).read_bytes().decode("latin-1")
    except FileNotFoundError:
        raise GraphFormatError("BVGraph properties file not found", path=prop_path) from None
    except OSError as e:
        raise GraphFormatError(
            f"cannot read BVGraph properties file: {e}", path=prop_path
        ) from None
    props = parse_properties(text)

    gclass = props.get("graphclass", props.get("class"))
    if gclass is None:
        raise GraphFormatError(
            "no 'graphclass' property: not a WebGraph properties file", path=prop_path
        )
    if gclass.strip() not in _GRAPH_CLASSES:
        raise GraphFormatError(
            "graph class is not supported (only it.unimi.dsi.webgraph.BVGraph can be read)",
            path=prop_path,
            text=gclass,
        )
    version = props.get("version")
    if version is None:
        raise GraphFormatError("missing BVGraph property 'version'", path=prop_path)
    if version.strip() != "0":
        raise GraphFormatError(
            "unsupported BVGraph format version (only version 0 is supported)",
            path=prop_path,
            text=version,
        )
    codes = _parse_flags(props.get("compressionflags", ""), prop_path)
    n = _int_property(props, "nodes", prop_path)
    m = _int_property(props, "arcs", prop_path)
    window = _int_property(props, "windowsize", prop_path)
    minint = _int_property(props, "minintervallength", prop_path)
    k = _int_property(props, "zetak", prop_path, default=3)
    if codes["RESIDUALS"] in (ZETA, GOLOMB) and k < 1:
        raise GraphFormatError(
            "BVGraph property 'zetak' must be >= 1", path=prop_path, text=props.get("zetak")
        )
    if n >= 1 << 62 or m >= 1 << 62:
        raise GraphFormatError("BVGraph 'nodes'/'arcs' too large", path=prop_path)

    # The file's bytes followed by 8 zero bytes (read in place, no second copy).
    try:
        with open(graph_path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            buf = np.zeros(size + 8, dtype=np.uint8)
            view = memoryview(buf)[:size]
            got = 0
            while got < size:
                r = f.readinto(view[got:])
                if not r:
                    break
                got += r
    except FileNotFoundError:
        raise GraphFormatError("BVGraph graph file not found", path=graph_path) from None
    except OSError as e:
        raise GraphFormatError(f"cannot read BVGraph graph file: {e}", path=graph_path) from None
    nbits = 8 * got

    src = np.empty(m, dtype=np.int64)
    dst = np.empty(m, dtype=np.int64)
    start = np.zeros(n + 1, dtype=np.int64)
    err, node, value, written, bitpos = _decode(
        buf,
        nbits,
        n,
        m,
        window,
        minint,
        k,
        codes["OUTDEGREES"],
        codes["REFERENCES"],
        codes["BLOCK_COUNT"],
        codes["BLOCKS"],
        codes["RESIDUALS"],
        src,
        dst,
        start,
    )
    err, node, value, written, bitpos = (int(err), int(node), int(value), int(written), int(bitpos))
    if err == _E_TRUNCATED or bitpos > nbits:
        raise GraphFormatError(
            f"truncated BVGraph data: the file ends ({got} bytes) while decoding "
            f"the successors of node {node} (of {n} nodes)",
            path=graph_path,
        )
    if err != _OK:
        what = {
            _E_TOO_MANY_ARCS: (
                f"node {node} has outdegree {value}, but only {m - written} of the {m} arcs "
                "declared by the 'arcs' property are left"
            ),
            _E_BAD_REFERENCE: (
                f"node {node} refers to node {node} - {value}, outside the window "
                f"(windowsize={window})"
            ),
            _E_BAD_BLOCKS: f"copy blocks of node {node} do not fit its reference list or outdegree",
            _E_BAD_INTERVALS: f"intervals of node {node} do not fit its outdegree",
            _E_OUT_OF_RANGE: f"successor {value} of node {node} is out of range [0, {n})",
            _E_NOT_INCREASING: (
                f"successor list of node {node} is not strictly increasing "
                f"(repeated successor {value})"
            ),
            _E_TOO_FEW_ARCS: f"decoded {written} arcs, but the 'arcs' property says {m}",
        }[err]
        raise GraphFormatError(f"corrupt BVGraph data: {what}", path=graph_path)
    return src, dst, n
