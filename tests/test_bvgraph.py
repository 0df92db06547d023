"""Tests for webrank.io.bvgraph (LAW WebGraph BVGraph decoder).

Besides the real cnr-2000 graph (skipped when the shared datasets are absent), the tests
use a small BVGraph *encoder* written here from the format description, which produces
graphs exercising every code and every part of the format (references, copy blocks,
intervals, residuals) with any compression flags.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import DATASETS

from webrank.errors import GraphFormatError
from webrank.io import bvgraph
from webrank.io.bvgraph import parse_properties, read_bvgraph

CNR_BASE = DATASETS / "law" / "cnr-2000"
CNR_TXT = DATASETS / "cnr-2000.txt.gz"

# --------------------------------------------------------------------------------------
# A minimal BVGraph encoder (dsiutils OutputBitStream codes, BVGraph list layout)
# --------------------------------------------------------------------------------------


class _BitWriter:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def int_(self, x: int, n: int) -> None:
        assert 0 <= x < (1 << n)
        if n:
            self.parts.append(format(x, f"0{n}b"))

    def unary(self, x: int) -> None:
        self.parts.append("0" * x + "1")

    def gamma(self, x: int) -> None:
        x += 1
        msb = x.bit_length() - 1
        self.unary(msb)
        self.int_(x - (1 << msb), msb)

    def delta(self, x: int) -> None:
        x += 1
        msb = x.bit_length() - 1
        self.gamma(msb)
        self.int_(x - (1 << msb), msb)

    def zeta(self, x: int, k: int) -> None:
        x += 1
        msb = x.bit_length() - 1
        h = msb // k
        self.unary(h)
        left = 1 << (h * k)
        if x - left < left:
            self.int_(x - left, h * k + k - 1)
        else:
            self.int_(x, h * k + k)

    def nibble(self, x: int) -> None:
        if x == 0:
            self.int_(8, 4)
            return
        h = (x.bit_length() - 1) // 3
        while True:
            self.int_(1 if h == 0 else 0, 1)
            self.int_((x >> (3 * h)) & 7, 3)
            if h == 0:
                break
            h -= 1

    def golomb(self, x: int, b: int) -> None:
        self.unary(x // b)
        r = x % b
        log2b = b.bit_length() - 1
        m = (1 << (log2b + 1)) - b
        if r < m:
            self.int_(r, log2b)
        else:
            self.int_(m + r, log2b + 1)

    def code(self, name: str, x: int, k: int) -> None:
        assert x >= 0
        if name == "GAMMA":
            self.gamma(x)
        elif name == "DELTA":
            self.delta(x)
        elif name == "UNARY":
            self.unary(x)
        elif name == "ZETA":
            self.zeta(x, k)
        elif name == "NIBBLE":
            self.nibble(x)
        elif name == "GOLOMB":
            self.golomb(x, k)
        else:  # pragma: no cover
            raise AssertionError(name)

    def tobytes(self) -> bytes:
        bits = "".join(self.parts)
        bits += "0" * (-len(bits) % 8)
        return int(bits, 2).to_bytes(len(bits) // 8, "big") if bits else b""


def _int2nat(v: int) -> int:
    return 2 * v if v >= 0 else -2 * v - 1


_DEFAULTS = {
    "OUTDEGREES": "GAMMA",
    "BLOCKS": "GAMMA",
    "RESIDUALS": "ZETA",
    "REFERENCES": "UNARY",
    "BLOCK_COUNT": "GAMMA",
}


def encode_bvgraph(
    base: Path,
    succ: list[list[int]],
    *,
    window: int = 7,
    minint: int = 4,
    k: int = 3,
    codes: dict[str, str] | None = None,
    flags: str | None = None,
    ref_rule: str = "best",
) -> None:
    """Write BASE.graph/BASE.properties for the successor lists ``succ``.

    ``ref_rule``: "best" (reference with the largest overlap, or none) or "cycle" (always
    reference ``x - 1 - x % window`` when possible, even with no overlap at all).
    """
    c = dict(_DEFAULTS)
    c.update(codes or {})
    n = len(succ)
    w = _BitWriter()
    for x, lst in enumerate(succ):
        lst = sorted(set(lst))
        succ[x] = lst
        d = len(lst)
        w.code(c["OUTDEGREES"], d, k)
        if d == 0:
            continue
        s = set(lst)
        ref = 0
        if window > 0:
            if ref_rule == "best":
                best = 0
                for r in range(1, min(window, x) + 1):
                    ov = len(s.intersection(succ[x - r]))
                    if ov > best:
                        best, ref = ov, r
            elif x > 0:
                ref = 1 + x % min(window, x)
            w.code(c["REFERENCES"], ref, k)
        copied: set[int] = set()
        if ref > 0:
            rl = succ[x - ref]
            # runs of copy/skip over the reference list, starting with a copy run
            runs: list[int] = []
            copying = True
            cur = 0
            for v in rl:
                if (v in s) == copying:
                    cur += 1
                else:
                    runs.append(cur)
                    copying = not copying
                    cur = 1
            runs.append(cur)
            blocks = runs[:-1]  # the last run is implicit
            w.code(c["BLOCK_COUNT"], len(blocks), k)
            for i, b in enumerate(blocks):
                w.code(c["BLOCKS"], b if i == 0 else b - 1, k)
            copied = s.intersection(rl)
        extra = [v for v in lst if v not in copied]
        residuals = extra
        if extra and minint > 0:
            intervals: list[tuple[int, int]] = []
            residuals = []
            i = 0
            while i < len(extra):
                j = i
                while j + 1 < len(extra) and extra[j + 1] == extra[j] + 1:
                    j += 1
                if j - i + 1 >= minint:
                    intervals.append((extra[i], j - i + 1))
                else:
                    residuals.extend(extra[i : j + 1])
                i = j + 1
            w.gamma(len(intervals))
            prev = 0
            for i, (left, ln) in enumerate(intervals):
                w.gamma(_int2nat(left - x) if i == 0 else left - prev - 1)
                w.gamma(ln - minint)
                prev = left + ln
        for i, r in enumerate(residuals):
            w.code(c["RESIDUALS"], _int2nat(r - x) if i == 0 else r - residuals[i - 1] - 1, k)
    base.with_suffix(".graph").write_bytes(w.tobytes())
    if flags is None:
        flags = "|".join(f"{comp}_{code}" for comp, code in (codes or {}).items())
    props = {
        "graphclass": "it.unimi.dsi.webgraph.BVGraph",
        "version": "0",
        "nodes": str(n),
        "arcs": str(sum(len(lst) for lst in succ)),
        "windowsize": str(window),
        "minintervallength": str(minint),
        "maxrefcount": "3",
        "zetak": str(k),
        "compressionflags": flags,
    }
    text = "#BVGraph properties\n" + "".join(f"{key}={v}\n" for key, v in props.items())
    base.with_suffix(".properties").write_text(text)


def random_lists(n: int, seed: int, max_deg: int = 40) -> list[list[int]]:
    """Successor lists with locality: copies of earlier lists, runs, scattered nodes,
    empty lists, self-loops and far-away successors."""
    rng = np.random.default_rng(seed)
    succ: list[list[int]] = []
    for x in range(n):
        kind = rng.integers(0, 5)
        s: set[int] = set()
        if kind == 0:
            pass  # empty list
        else:
            if x > 0 and rng.random() < 0.7:
                prev = succ[x - 1 - int(rng.integers(0, min(x, 9)))]
                s.update(v for v in prev if rng.random() < 0.8)
            if rng.random() < 0.5:
                a = int(rng.integers(0, n))
                s.update(range(a, min(n, a + int(rng.integers(1, 12)))))
            s.update(int(v) for v in rng.integers(0, n, size=int(rng.integers(0, max_deg // 4))))
            if rng.random() < 0.2:
                s.add(x)
        succ.append(sorted(s))
    return succ


def edge_keys(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    return np.sort(src.astype(np.int64) * n + dst.astype(np.int64))


def check_lists(src, dst, n, succ) -> None:
    expected_src = np.repeat(np.arange(n), [len(s) for s in succ])
    expected_dst = np.array([v for s in succ for v in s], dtype=np.int64)
    assert src.shape == dst.shape == expected_src.shape
    np.testing.assert_array_equal(src, expected_src)
    np.testing.assert_array_equal(dst, expected_dst)


# --------------------------------------------------------------------------------------
# The real cnr-2000 graph
# --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_cnr2000_matches_edge_list():
    if not (CNR_BASE.with_suffix(".graph").exists() and CNR_TXT.exists()):
        pytest.skip("shared LAW datasets not available")
    src, dst, n = read_bvgraph(CNR_BASE.with_suffix(".graph"))
    assert n == 325557
    assert src.shape == dst.shape == (3216152,)
    assert src.dtype.kind == "i" and dst.dtype.kind == "i"
    assert np.all(np.diff(src) >= 0)
    same_node = src[1:] == src[:-1]
    assert np.all(dst[1:][same_node] > dst[:-1][same_node])
    assert dst.min() >= 0 and dst.max() < n

    edges = np.loadtxt(CNR_TXT, dtype=np.int64, comments="#", ndmin=2)
    assert edges.shape == (3216152, 2)
    np.testing.assert_array_equal(edge_keys(src, dst, n), edge_keys(edges[:, 0], edges[:, 1], n))


def test_cnr2000_truncated(tmp_path):
    if not CNR_BASE.with_suffix(".graph").exists():
        pytest.skip("shared LAW datasets not available")
    base = tmp_path / "cnr"
    shutil.copy(CNR_BASE.with_suffix(".properties"), base.with_suffix(".properties"))
    data = CNR_BASE.with_suffix(".graph").read_bytes()
    base.with_suffix(".graph").write_bytes(data[: len(data) // 2])
    with pytest.raises(GraphFormatError, match="truncated") as exc:
        read_bvgraph(base)
    assert str(base.with_suffix(".graph")) in str(exc.value)


# --------------------------------------------------------------------------------------
# Synthetic graphs
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "minint", "k", "codes", "ref_rule"),
    [
        (7, 4, 3, {}, "best"),
        (7, 4, 3, {}, "cycle"),
        (0, 4, 3, {}, "best"),
        (3, 0, 3, {}, "best"),
        (0, 0, 2, {}, "best"),
        (1, 2, 5, {}, "cycle"),
        (
            7,
            4,
            3,
            {
                "OUTDEGREES": "DELTA",
                "BLOCKS": "DELTA",
                "RESIDUALS": "GAMMA",
                "REFERENCES": "GAMMA",
                "BLOCK_COUNT": "UNARY",
            },
            "cycle",
        ),
        (5, 3, 1, {"RESIDUALS": "DELTA", "REFERENCES": "DELTA", "BLOCK_COUNT": "DELTA"}, "best"),
        (7, 4, 3, {"RESIDUALS": "NIBBLE"}, "cycle"),
        (7, 4, 5, {"RESIDUALS": "GOLOMB"}, "best"),
        (7, 4, 1, {"RESIDUALS": "GOLOMB", "OUTDEGREES": "GAMMA"}, "cycle"),
        (7, 4, 7, {"RESIDUALS": "ZETA", "OFFSETS": "DELTA"}, "best"),
    ],
)
def test_synthetic_roundtrip(tmp_path, window, minint, k, codes, ref_rule):
    n = 400
    succ = random_lists(n, seed=window * 100 + minint * 10 + k)
    base = tmp_path / "g"
    encode_bvgraph(base, succ, window=window, minint=minint, k=k, codes=codes, ref_rule=ref_rule)
    src, dst, num = read_bvgraph(base)
    assert num == n
    check_lists(src, dst, n, succ)


def test_large_values_and_long_codes(tmp_path):
    # successors far from their node (long codes), high degrees, big intervals
    n = 1 << 18
    succ: list[list[int]] = [[] for _ in range(n)]
    succ[0] = [n - 1]
    succ[1] = [0, 5, *range(1000, 1200), n - 1000]
    succ[2] = [1, *range(1000, 1200), n - 1000, n - 1]
    succ[n - 1] = [0, 1, n - 1]
    base = tmp_path / "big"
    encode_bvgraph(base, succ, window=3, minint=4)
    src, dst, num = read_bvgraph(base)
    assert num == n
    check_lists(src, dst, n, succ)


@pytest.mark.parametrize(
    ("code", "k", "limit"),
    [
        ("GAMMA", 3, 1 << 61),
        ("DELTA", 3, 1 << 61),
        ("UNARY", 3, 200),
        ("ZETA", 1, 1 << 58),
        ("ZETA", 3, 1 << 58),
        ("ZETA", 7, 1 << 54),
        ("NIBBLE", 3, 1 << 60),
        ("GOLOMB", 1, 100),
        ("GOLOMB", 6, 1000),
        ("GOLOMB", 1 << 20, 1 << 40),
    ],
)
def test_bit_readers(code, k, limit):
    """Every code, at every bit alignment, including codes longer than the 48-bit window."""
    rng = np.random.default_rng(6)
    exps = rng.integers(0, limit.bit_length(), size=3000)
    values = [int(rng.integers(0, 1 << int(e))) % limit for e in exps] + [0, 1, limit - 1]
    w = _BitWriter()
    for v in values:
        w.code(code, v, k)
    data = w.tobytes()
    nbits = 8 * len(data)
    decoded, pos = bvgraph._read_codes(data, getattr(bvgraph, code), k, len(values))
    assert decoded.tolist() == values
    assert nbits - 8 < pos <= nbits


def test_empty_graphs(tmp_path):
    base = tmp_path / "empty"
    encode_bvgraph(base, [[] for _ in range(5)])
    src, dst, n = read_bvgraph(base)
    assert n == 5 and src.size == 0 and dst.size == 0
    encode_bvgraph(base, [])
    src, dst, n = read_bvgraph(base)
    assert n == 0 and src.size == 0 and dst.size == 0


def test_path_forms(tmp_path):
    succ = random_lists(50, seed=1)
    base = tmp_path / "g"
    encode_bvgraph(base, succ)
    for p in (base, str(base), base.with_suffix(".graph"), str(base.with_suffix(".properties"))):
        src, dst, n = read_bvgraph(p)
        assert n == 50
        check_lists(src, dst, n, succ)


def test_properties_syntax(tmp_path):
    text = textwrap.dedent(
        """\
        # comment
        ! another comment
          graphclass : it.unimi.dsi.webgraph.BVGraph
        version 0
        key\\=with\\:escapes = a\\tb\\u0041
        long = one, \\
               two
        empty=
        """
    )
    props = parse_properties(text)
    assert props["graphclass"] == "it.unimi.dsi.webgraph.BVGraph"
    assert props["version"] == "0"
    assert props["key=with:escapes"] == "a\tbA"
    assert props["long"] == "one, two"
    assert props["empty"] == ""

    # a file using ':' separators, the 'class' key and explicit default flags
    succ = random_lists(60, seed=2)
    base = tmp_path / "g"
    encode_bvgraph(base, succ, flags="OUTDEGREES_GAMMA | REFERENCES_UNARY|RESIDUALS_ZETA")
    p = base.with_suffix(".properties")
    p.write_text(p.read_text().replace("graphclass=", "class: ").replace("nodes=", "nodes : "))
    src, dst, n = read_bvgraph(base)
    check_lists(src, dst, n, succ)


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


@pytest.fixture
def small_graph(tmp_path):
    succ = random_lists(200, seed=4)
    base = tmp_path / "g"
    encode_bvgraph(base, succ)
    return base, succ


def _set_property(base: Path, key: str, value: str | None) -> None:
    p = base.with_suffix(".properties")
    lines = [ln for ln in p.read_text().splitlines() if not ln.startswith(f"{key}=")]
    if value is not None:
        lines.append(f"{key}={value}")
    p.write_text("\n".join(lines) + "\n")


def test_truncated_graph(small_graph):
    base, _ = small_graph
    g = base.with_suffix(".graph")
    data = g.read_bytes()
    for cut in (len(data) - 1, len(data) // 2, 1, 0):
        g.write_bytes(data[:cut])
        with pytest.raises(GraphFormatError, match="truncated") as exc:
            read_bvgraph(base)
        assert exc.value.path == str(g)


def test_missing_files(small_graph):
    base, _ = small_graph
    base.with_suffix(".properties").unlink()
    with pytest.raises(GraphFormatError, match="not found") as exc:
        read_bvgraph(base.with_suffix(".graph"))
    assert exc.value.path == str(base.with_suffix(".properties"))

    base2 = base.parent / "h"
    encode_bvgraph(base2, [[1], [0]])
    base2.with_suffix(".graph").unlink()
    with pytest.raises(GraphFormatError, match="not found") as exc:
        read_bvgraph(base2)
    assert exc.value.path == str(base2.with_suffix(".graph"))


@pytest.mark.parametrize(
    "flags",
    [
        "RESIDUALS_SKEWED_GOLOMB",
        "OUTDEGREES_ZETA",
        "OUTDEGREES_GAMMA|FOO_BAR",
        "BOGUS",
        "RESIDUALS_ARITHMETIC",
    ],
)
def test_unsupported_flag(small_graph, flags):
    base, _ = small_graph
    _set_property(base, "compressionflags", flags)
    with pytest.raises(GraphFormatError, match="unsupported BVGraph compression flag") as exc:
        read_bvgraph(base)
    assert str(base.with_suffix(".properties")) in str(exc.value)


@pytest.mark.parametrize("delta", [1, -1, 1000])
def test_wrong_arc_count(small_graph, delta):
    base, succ = small_graph
    m = sum(len(s) for s in succ)
    _set_property(base, "arcs", str(m + delta))
    with pytest.raises(GraphFormatError, match="arcs") as exc:
        read_bvgraph(base)
    assert exc.value.path == str(base.with_suffix(".graph"))


def test_successor_out_of_range(tmp_path):
    base = tmp_path / "g"
    encode_bvgraph(base, [[3], [0], [1], [2]])
    _set_property(base, "nodes", "3")
    _set_property(base, "arcs", "3")
    with pytest.raises(GraphFormatError, match="out of range"):
        read_bvgraph(base)


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("graphclass", "it.unimi.dsi.webgraph.EFGraph", "graph class"),
        ("graphclass", None, "graphclass"),
        ("version", "1", "version"),
        ("version", None, "version"),
        ("nodes", "abc", "not an integer"),
        ("nodes", None, "nodes"),
        ("arcs", None, "arcs"),
        ("windowsize", "-1", "windowsize"),
        ("zetak", "0", "zetak"),
    ],
)
def test_bad_properties(small_graph, key, value, match):
    base, _ = small_graph
    _set_property(base, key, value)
    with pytest.raises(GraphFormatError, match=match) as exc:
        read_bvgraph(base)
    assert exc.value.path == str(base.with_suffix(".properties"))


def test_big_webgraph_class_accepted(small_graph):
    base, succ = small_graph
    _set_property(base, "graphclass", "it.unimi.dsi.big.webgraph.BVGraph")
    src, dst, n = read_bvgraph(base)
    check_lists(src, dst, n, succ)


def test_corrupt_data_does_not_crash(small_graph):
    """Random bit flips give either a GraphFormatError or some decoded graph, never a crash
    or a hang."""
    base, _ = small_graph
    g = base.with_suffix(".graph")
    data = bytearray(g.read_bytes())
    rng = np.random.default_rng(5)
    errors = 0
    for _ in range(60):
        bad = bytearray(data)
        for i in rng.integers(0, len(bad), size=3):
            bad[i] ^= 1 << int(rng.integers(0, 8))
        g.write_bytes(bytes(bad))
        try:
            src, dst, n = read_bvgraph(base)
        except GraphFormatError:
            errors += 1
        else:
            assert dst.size == src.size and (dst.size == 0 or (dst.min() >= 0 and dst.max() < n))
    assert errors > 0
