"""Weights whose sums leave the float64 range, native caches that disagree with
themselves, sizes a file claims but cannot hold, and float ids beyond int64: each refused
in one GraphFormatError naming the file, the field and the value, or (weights) scaled so
that the ranking is the right one."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import DATASETS
from package_path import WEBRANK_PATH

import webrank
from webrank import build
from webrank.errors import GraphFormatError, HostMemoryError
from webrank.graph import Graph

SRC = WEBRANK_PATH

# node 0 links to 1 and 2 with weights of 1e308 each (their sum is beyond float64);
# 1 and 2 link back to 0. The answer is that of weights 1, 1, 1, 1 (each node's links
# are normalised by their sum): x0 = 0.135 / 0.2775, x1 = x2 = 0.05 + 0.425 x0.
HUGE = "0 1 1e308\n0 2 1e308\n1 0 1\n2 0 1\n"
X0 = 0.135 / 0.2775
EXPECTED = np.array([X0, 0.05 + 0.425 * X0, 0.05 + 0.425 * X0])


def reference(src, dst, w, n):
    """networkx's PageRank of the same links with each node's weights divided by its
    largest (networkx itself would overflow on the sums)."""
    nx = pytest.importorskip("networkx")
    src, dst, w = np.asarray(src), np.asarray(dst), np.asarray(w, dtype=np.float64)
    top = np.zeros(n)
    np.maximum.at(top, src, w)
    g = nx.MultiDiGraph()
    g.add_nodes_from(range(n))
    for s, d, x in zip(src.tolist(), dst.tolist(), (w / top[src]).tolist(), strict=True):
        g.add_edge(s, d, weight=x)
    pr = nx.pagerank(g, alpha=0.85, tol=1e-14, max_iter=10000, weight="weight")
    return np.array([pr[i] for i in range(n)])


def cli(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "webrank", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=300)


def ranked(g: Graph) -> np.ndarray:
    return webrank.pagerank(g, tol=1e-13, device="cpu").scores


# -- item 2: weight sums beyond float64 ------------------------------------------------------
@pytest.mark.parametrize("path", ["serial", "parallel"])
def test_weight_sums_beyond_float64_rank_right_from_a_text_file(tmp_path, monkeypatch, path):
    from webrank.io import edgelist

    big = 0 if path == "parallel" else 1 << 62
    monkeypatch.setattr(build, "PARALLEL_BUILD_EDGES", big)
    monkeypatch.setattr(edgelist, "PARALLEL_PARSE_BYTES", big)
    p = tmp_path / "w.txt"
    p.write_text(HUGE)
    g = webrank.load(p)
    assert np.isfinite(g.out_weight).all() and np.isfinite(g.weights).all()
    np.testing.assert_allclose(ranked(g), EXPECTED, atol=1e-10)


@pytest.mark.parametrize("how", ["arrays", "chunked", "pieces", "parquet", "pandas", "arrow",
                                 "scipy", "mtx"])
def test_weight_sums_beyond_float64_rank_right_on_every_path(tmp_path, how):
    src, dst = np.array([0, 0, 1, 2]), np.array([1, 2, 0, 0])
    w = np.array([1e308, 1e308, 1.0, 1.0])
    if how == "arrays":
        g = Graph.from_edges(src, dst, w)
    elif how == "chunked":  # as the parallel parse hands its columns over
        cut = build.Chunked(src, np.array([0, 2]), np.array([2, 2]))
        g = Graph.from_edges(cut, build.Chunked(dst, cut.starts, cut.counts),
                             build.Chunked(w, cut.starts, cut.counts))
    elif how == "pieces":  # as pyarrow's batches come for a GPU build (built on the host)
        g = Graph.from_edges(build.Pieces([src[:1], src[1:]]),
                             build.Pieces([dst[:1], dst[1:]]), build.Pieces([w[:1], w[1:]]))
    elif how in ("parquet", "pandas", "arrow"):
        pa = pytest.importorskip("pyarrow")
        table = pa.table({"src": src, "dst": dst, "weight": w})
        if how == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, tmp_path / "w.parquet")
            g = webrank.load(tmp_path / "w.parquet")
        elif how == "pandas":
            pd = pytest.importorskip("pandas")
            g = Graph.from_dataframe(pd.DataFrame({"src": src, "dst": dst, "w": w}),
                                     weight="w")
        else:
            g = Graph.from_dataframe(table, weight="weight")
    elif how == "scipy":
        sp = pytest.importorskip("scipy.sparse")
        g = Graph.from_scipy(sp.coo_array((w, (src, dst)), shape=(3, 3)))
    else:
        (tmp_path / "w.mtx").write_text(
            "%%MatrixMarket matrix coordinate real general\n3 3 4\n"
            "1 2 1e308\n1 3 1e308\n2 1 1\n3 1 1\n")
        g = webrank.load(tmp_path / "w.mtx")
    assert np.isfinite(g.out_weight).all() and np.isfinite(g.weights).all()
    np.testing.assert_allclose(ranked(g), reference(src, dst, w, 3), atol=1e-10)
    np.testing.assert_allclose(ranked(g), EXPECTED, atol=1e-10)


@pytest.mark.parametrize("parallel", [False, True])
def test_parallel_links_whose_weights_add_up_beyond_float64(monkeypatch, parallel):
    # duplicates="sum": the link 0 -> 1 twice at 1e308 is one link of 2e308
    monkeypatch.setattr(build, "PARALLEL_BUILD_EDGES", 0 if parallel else 1 << 62)
    src, dst = np.array([0, 0, 0, 1, 2]), np.array([1, 1, 2, 0, 0])
    w = np.array([1e308, 1e308, 1e308, 1.0, 1.0])
    g = Graph.from_edges(src, dst, w, duplicates="sum")
    assert g.num_edges == 4
    assert np.isfinite(g.weights).all() and np.isfinite(g.out_weight).all()
    np.testing.assert_allclose(ranked(g), reference(src, dst, w, 3), atol=1e-10)


def test_scaling_keeps_other_nodes_weights_and_tiny_weights():
    # only the node whose sum overflows is scaled: node 1's weights (tiny, unequal) are
    # kept exactly, and so are its transition probabilities
    src = np.array([0, 0, 1, 1, 2])
    dst = np.array([1, 2, 0, 2, 0])
    w = np.array([1e308, 1e308, 5e-324, 1e-323, 3.0])
    g = Graph.from_edges(src, dst, w)
    kept = {(int(s), int(d)): x for s, d, x in zip(*g.edges(), strict=True)}
    assert kept[(1, 0)] == 5e-324 and kept[(1, 2)] == 1e-323 and kept[(2, 0)] == 3.0
    assert kept[(0, 1)] == kept[(0, 2)] > 0
    np.testing.assert_allclose(ranked(g), reference(src, dst, w, 3), atol=1e-10)


def test_convert_then_rank_a_graph_whose_weight_sums_overflow(tmp_path):
    p = tmp_path / "w.txt"
    p.write_text(HUGE)
    r = cli("convert", p, tmp_path / "w.npz")
    assert r.returncode == 0, r.stderr
    r = cli("rank", tmp_path / "w.npz", "--json", "--tol", "1e-12")
    assert r.returncode == 0, r.stderr
    import json

    top = {t["node"]: t["score"] for t in json.loads(r.stdout)["top"]}
    np.testing.assert_allclose([top[0], top[1], top[2]], EXPECTED, atol=1e-9)
    g = webrank.load(tmp_path / "w.npz")
    np.testing.assert_allclose(ranked(g), EXPECTED, atol=1e-10)


# -- item 3 and the index test gap: caches that disagree with themselves ---------------------
def resave(src: Path, dst: Path, **changes) -> Path:
    """The cache ``src`` saved again as ``dst`` with some arrays replaced."""
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    arrays.update(changes)
    np.savez(dst, **arrays)
    return dst


@pytest.mark.parametrize("weighted", [False, True])
def test_cache_whose_out_weights_disagree_with_its_links_is_refused(tmp_path, weighted):
    # node 0 has two out-links, node 1 one: their out-weights swapped keep the total
    w = [1.0, 3.0, 2.0, 1.0] if weighted else None
    g = Graph.from_edges([0, 0, 1, 2], [1, 2, 2, 0], w, name="g")
    webrank.save_graph(g, tmp_path / "g.npz")
    ow = g.out_weight.copy()
    ow[[0, 1]] = ow[[1, 0]]
    assert ow.sum() == g.out_weight.sum()
    bad = resave(tmp_path / "g.npz", tmp_path / "bad.npz", out_weight=ow)
    with pytest.raises(GraphFormatError, match="out_weight") as e:
        webrank.load(bad)
    assert "bad.npz" in str(e.value) and "node 0" in str(e.value)


def test_cache_out_weight_off_by_more_than_rounding_is_refused(tmp_path):
    """A weighted node's stored out-weight may differ from its links' sum by what another
    order of the additions makes (a few ulps), not by 1e-12: that would rank another
    graph, off by more than a tight certified bound."""
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 40, 300), rng.integers(0, 40, 300)
    g = Graph.from_edges(src, dst, rng.random(300), name="g")
    webrank.save_graph(g, tmp_path / "g.npz")
    k = int(np.argmax(g.out_weight))
    for factor, refused in ((1 + 1e-12, True), (1 + 2.0**-52, False)):
        ow = g.out_weight.copy()
        ow[k] *= factor
        path = resave(tmp_path / "g.npz", tmp_path / f"w{factor!r}.npz", out_weight=ow)
        if refused:
            with pytest.raises(GraphFormatError, match=f"out_weight of node {k}"):
                webrank.load(path)
        else:  # rounding: loaded, with the stored value
            assert webrank.load(path).out_weight[k] == ow[k]


def test_cache_out_weights_are_the_links_sums_after_loading(tmp_path):
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 50, 400), rng.integers(0, 50, 400)
    g = Graph.from_edges(src, dst, rng.random(400))
    webrank.save_graph(g, tmp_path / "g.npz")
    h = webrank.load(tmp_path / "g.npz")
    np.testing.assert_array_equal(h.out_weight, g.out_weight)
    np.testing.assert_array_equal(ranked(h), ranked(g))


def test_cache_with_an_index_equal_to_the_node_count_is_refused(tmp_path):
    g = Graph.from_edges([0, 1, 2], [1, 2, 0])
    webrank.save_graph(g, tmp_path / "g.npz")
    idx = g.indices.copy()
    idx[-1] = g.n  # one past the last node
    bad = resave(tmp_path / "g.npz", tmp_path / "bad.npz", indices=idx)
    with pytest.raises(GraphFormatError, match="indices out of range") as e:
        webrank.load(bad)
    assert "bad.npz" in str(e.value) and " 3" in str(e.value)


# -- item 8: sizes a file claims but cannot hold ---------------------------------------------
def forged_header(path: Path, out: Path, member: str, shape: tuple, *,
                  compressed: bool = False) -> Path:
    """The archive ``path`` written again with ``member``'s .npy header claiming
    ``shape`` (its data unchanged)."""
    from numpy.lib import format as npy

    with zipfile.ZipFile(path) as z, zipfile.ZipFile(
            out, "w", zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED) as o:
        for info in z.infolist():
            data = z.read(info.filename)
            if info.filename == member:
                f = io.BytesIO(data)
                npy.read_magic(f)
                _, _, dtype = npy.read_array_header_1_0(f)
                head = io.BytesIO()
                npy.write_array_header_1_0(head, {"descr": npy.dtype_to_descr(dtype),
                                                  "fortran_order": False, "shape": shape})
                data = head.getvalue() + data[f.tell():]
            o.writestr(info.filename, data)
    return out


@pytest.mark.parametrize("compressed", [False, True])
def test_cache_claiming_more_entries_than_its_bytes_is_refused(tmp_path, compressed):
    webrank.save_graph(Graph.from_edges([0, 1, 2], [1, 2, 0]), tmp_path / "g.npz")
    bad = forged_header(tmp_path / "g.npz", tmp_path / "big.npz", "indices.npy", (2**40,),
                        compressed=compressed)
    with pytest.raises(GraphFormatError, match="indices") as e:
        webrank.load(bad)
    assert "big.npz" in str(e.value) and f"{2**40:,}" in str(e.value)


def patch_size(path: Path, member: str, size: int) -> None:
    """Make the zip ``path`` claim that ``member`` inflates to ``size`` bytes (its local
    header and its central directory entry)."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        lh = z.getinfo(member).header_offset
    data[lh + 22:lh + 26] = size.to_bytes(4, "little")
    end = data.rfind(b"PK\x05\x06")
    pos = int.from_bytes(data[end + 16:end + 20], "little")
    while data[pos:pos + 4] == b"PK\x01\x02":
        length = int.from_bytes(data[pos + 28:pos + 30], "little")
        if data[pos + 46:pos + 46 + length].decode() == member:
            data[pos + 24:pos + 28] = size.to_bytes(4, "little")
        pos += 46 + length + int.from_bytes(data[pos + 30:pos + 32], "little") \
            + int.from_bytes(data[pos + 32:pos + 34], "little")
    path.write_bytes(bytes(data))


def test_compressed_cache_member_claiming_more_than_deflate_makes_is_refused(
        tmp_path, monkeypatch):
    from webrank import memory

    webrank.save_graph(Graph.from_edges([0, 1, 2], [1, 2, 0]), tmp_path / "g.npz")
    bad = forged_header(tmp_path / "g.npz", tmp_path / "big.npz", "indices.npy",
                        (200_000,), compressed=True)
    patch_size(bad, "indices.npy", 1_000_000)
    with zipfile.ZipFile(bad) as z:
        assert z.getinfo("indices.npy").file_size == 1_000_000
    monkeypatch.setattr(memory, "available_bytes", lambda: 1000)  # (nothing allocated)
    with pytest.raises(GraphFormatError, match="'indices' claims 1,000,000 bytes") as e:
        webrank.load(bad)
    assert "big.npz" in str(e.value) and "inflate" in str(e.value)


def test_cache_larger_than_the_memory_at_hand_is_refused(tmp_path, monkeypatch):
    from webrank import memory

    webrank.save_graph(Graph.from_edges(np.arange(1000), np.arange(1, 1001)),
                       tmp_path / "g.npz")
    monkeypatch.setattr(memory, "available_bytes", lambda: 1000)
    with pytest.raises(HostMemoryError, match=r"g\.npz"):
        webrank.load(tmp_path / "g.npz")


def bvgraph(tmp_path: Path, nodes: int, arcs: int, data: bytes = b"\x00" * 16) -> Path:
    base = tmp_path / "b"
    (tmp_path / "b.graph").write_bytes(data)
    (tmp_path / "b.properties").write_text(
        f"graphclass=it.unimi.dsi.webgraph.BVGraph\nversion=0\nnodes={nodes}\narcs={arcs}\n"
        "windowsize=7\nminintervallength=4\nzetak=3\ncompressionflags=\n")
    return Path(str(base) + ".graph")


def test_bvgraph_claiming_more_nodes_than_its_bits_is_refused(tmp_path):
    p = bvgraph(tmp_path, 10**12, 10)
    with pytest.raises(GraphFormatError, match=r"'nodes' property in b\.properties") as e:
        webrank.load(p)
    assert e.value.path.endswith("b.graph") and f"{10**12:,}" in str(e.value)


def test_bvgraph_claiming_more_arcs_than_its_nodes_allow_is_refused(tmp_path):
    p = bvgraph(tmp_path, 100, 10**12)
    with pytest.raises(GraphFormatError, match="arcs") as e:
        webrank.load(p)
    assert "b.properties" in str(e.value) and f"{10**12:,}" in str(e.value)


def test_bvgraph_claim_of_the_real_file_past_its_size(tmp_path):
    law = DATASETS / "law" / "cnr-2000.graph"
    if not law.exists():
        pytest.skip("the LAW cnr-2000 files are not present")
    (tmp_path / "c.graph").symlink_to(law)
    text = (DATASETS / "law" / "cnr-2000.properties").read_text(encoding="latin-1")
    (tmp_path / "c.properties").write_text(
        "\n".join("nodes=1000000000000" if ln.startswith("nodes=") else ln
                  for ln in text.splitlines()), encoding="latin-1")
    with pytest.raises(GraphFormatError, match="nodes"):
        webrank.load(tmp_path / "c.graph")


def test_bvgraph_larger_than_the_memory_at_hand_is_refused(tmp_path, monkeypatch):
    from webrank import memory

    p = bvgraph(tmp_path, 100, 5000)
    monkeypatch.setattr(memory, "available_bytes", lambda: 1000)
    with pytest.raises(HostMemoryError, match=r"b\.properties"):
        webrank.load(p)


def test_mtx_claiming_more_entries_than_its_bytes_is_refused(tmp_path):
    p = tmp_path / "m.mtx"
    p.write_text("%%MatrixMarket matrix coordinate real general\n3 3 1000000000000\n1 2 1\n")
    with pytest.raises(GraphFormatError, match="entries") as e:
        webrank.load(p)
    assert "m.mtx" in str(e.value) and "1,000,000,000,000" in str(e.value)


def test_mtx_larger_than_the_memory_at_hand_is_refused(tmp_path, monkeypatch):
    import gzip

    from webrank import memory

    p = tmp_path / "m.mtx.gz"  # compressed: the bytes bound nothing, the memory does
    p.write_bytes(gzip.compress(
        b"%%MatrixMarket matrix coordinate pattern general\n3 3 100000\n1 2\n"))
    monkeypatch.setattr(memory, "available_bytes", lambda: 10000)
    with pytest.raises(HostMemoryError, match=r"m\.mtx\.gz"):
        webrank.load(p)


def test_parquet_rows_beyond_the_memory_at_hand_are_refused(tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from webrank import memory

    pq.write_table(pa.table({"src": np.arange(5000), "dst": np.arange(1, 5001)}),
                   tmp_path / "e.parquet")
    monkeypatch.setattr(memory, "available_bytes", lambda: 10000)
    with pytest.raises(HostMemoryError, match="5,000 rows") as e:
        webrank.load(tmp_path / "e.parquet")
    assert "e.parquet" in str(e.value)


# -- item 9: float ids beyond int64 ------------------------------------------------------------
@pytest.mark.parametrize("bad", [1e308, 2.0**63, -1e308, float("inf")])
def test_parquet_float_id_beyond_int64_is_refused_without_a_cast_warning(tmp_path, bad):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"src": [0.0, 1.0, 2.0], "dst": [1.0, bad, 0.0]}),
                   tmp_path / "f.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(GraphFormatError, match="column 'dst', row 1") as e:
            webrank.load(tmp_path / "f.parquet")
    assert "f.parquet" in str(e.value) and str(bad) in str(e.value)


@pytest.mark.parametrize("bad", [1e308, 2.0**63, -1e308])
def test_float_id_arrays_beyond_int64_are_refused_without_a_cast_warning(bad):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(GraphFormatError, match="dst\\[1\\]") as e:
            Graph.from_edges(np.array([0.0, 1.0]), np.array([1.0, bad]), name="x")
    assert str(bad) in str(e.value)


def test_largest_float_ids_below_2_63_still_read(tmp_path):
    pa = pytest.importorskip("pyarrow")
    top = float(np.nextafter(2.0**63, 0))
    g = Graph.from_dataframe(pa.table({"src": [0.0, top], "dst": [top, 0.0]}))
    assert g.labels.tolist() == [0, int(top)]
