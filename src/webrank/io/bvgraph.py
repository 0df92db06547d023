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

The decoder is C++ compiled with the package (``native/bvgraph.cpp``, run without the
GIL). It decodes the whole graph in one sequential pass, writing successors straight into
output arrays pre-allocated from the ``arcs`` property (checked first: no more ``nodes``
than bits in the graph file, no more ``arcs`` than ``nodes**2``, and room for both in the
memory available); copy references read the earlier lists back from that output through
per-node start offsets. The result is two int64 arrays (``src``
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from webrank.errors import GraphFormatError
from webrank.kernels.native import lib

__all__ = ["read_bvgraph"]

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

# Error codes returned by the decoder (native/bvgraph.cpp).
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
# The bit readers and the decode loop are C++ (native/bvgraph.cpp, the module docstring
# describes what they read): no compiler runs on a user's call.
# --------------------------------------------------------------------------------------


def _read_codes(data: bytes, code: int, k: int, count: int) -> tuple[np.ndarray, int]:
    """The first ``count`` codes ``code`` (with parameter ``k``) of the bit stream ``data``,
    and the bit position after them: the decoder's bit readers on their own (tests)."""
    buf = np.zeros(len(data) + 8, dtype=np.uint8)  # the decoder reads 8 bytes at a time
    buf[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(count, dtype=np.int64)
    pos = lib.bvgraph_read_codes(buf, 8 * len(data), code, k, out)
    return out, int(pos)


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


def _check_claims(n: int, m: int, nbytes: int, prop_path: str, graph_path: str) -> None:
    """The ``nodes`` and ``arcs`` properties, checked before their arrays are allocated:
    each node's outdegree takes at least one bit of the ``nbytes`` of the graph file,
    a node has at most ``n`` successors (no more arcs than ``n**2``: intervals and
    copied lists let a file hold far more arcs than bits), and the arcs' columns (16
    bytes an arc), the node offsets (8 a node) and the CSR the build makes of them (12
    an arc) must fit in the memory available.

    Raises
    ------
    GraphFormatError
        A claim the graph file cannot hold (as a truncated graph file cannot), naming
        the property.
    HostMemoryError
        They cannot fit in memory.
    """
    from webrank.memory import check_fits

    if n > 8 * nbytes:
        raise GraphFormatError(
            f"truncated BVGraph data, or a wrong 'nodes' property in "
            f"{os.path.basename(prop_path)}: it claims {n:,} nodes, but the file's "
            f"{nbytes:,} bytes hold at most {8 * nbytes:,} (a node takes a bit at least)",
            path=graph_path)
    if m > n * n:
        raise GraphFormatError(f"the 'arcs' property claims {m:,} arcs, but {n:,} nodes "
                               f"have at most {n * n:,}", path=prop_path)
    check_fits(28 * m + 8 * (n + 1), f"the 'nodes' and 'arcs' properties claim {n:,} "
               f"nodes and {m:,} arcs", "are the properties right?", path=prop_path)


@dataclass(frozen=True)
class _Properties:
    """The checked properties of a BVGraph (those the decoder takes)."""

    n: int
    m: int
    window: int
    minint: int
    k: int
    codes: dict[str, int]


def _read_properties(prop_path: str) -> _Properties:
    """BASENAME.properties read and checked: a version-0 ``BVGraph`` with codes and sizes
    the decoder takes (GraphFormatError naming the file and the property otherwise)."""
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
    return _Properties(n, m, window, minint, k, codes)


def _read_graph_bytes(graph_path: str) -> tuple[np.ndarray, int]:
    """``(buffer, bytes read)``: BASENAME.graph's bytes followed by 8 zero bytes (the
    decoder reads 64 bits at a time), read in place (no second copy)."""
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
    return buf, got


def _decode_error(err: int, node: int, value: int, written: int, p: _Properties) -> str:
    """What the decoder's error code ``err`` found, in words."""
    n, m, window = p.n, p.m, p.window
    return {
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
    prop_path, graph_path = base + ".properties", base + ".graph"
    p = _read_properties(prop_path)
    buf, got = _read_graph_bytes(graph_path)
    _check_claims(p.n, p.m, got, prop_path, graph_path)
    src = np.empty(p.m, dtype=np.int64)
    dst = np.empty(p.m, dtype=np.int64)
    start = np.zeros(p.n + 1, dtype=np.int64)
    codes = p.codes
    status = lib.bvgraph_decode(
        buf, 8 * got, p.n, p.m, p.window, p.minint, p.k, codes["OUTDEGREES"],
        codes["REFERENCES"], codes["BLOCK_COUNT"], codes["BLOCKS"], codes["RESIDUALS"],
        src, dst, start)
    err, node, value, written, bitpos = (int(v) for v in status)
    if err == _E_TRUNCATED or bitpos > 8 * got:
        raise GraphFormatError(
            f"truncated BVGraph data: the file ends ({got} bytes) while decoding "
            f"the successors of node {node} (of {p.n} nodes)",
            path=graph_path,
        )
    if err != _OK:
        what = _decode_error(err, node, value, written, p)
        raise GraphFormatError(f"corrupt BVGraph data: {what}", path=graph_path)
    n = p.n
    return src, dst, n
