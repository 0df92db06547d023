"""A first GPU run compiles none of CuPy's own kernels (issue "First answer without a
compiler"): loading a file for the GPU, the operator's setup, the solve's bookkeeping and
the result use copies, memsets, CuPy's precompiled sort and webrank's own (prebuilt)
kernels only (:mod:`webrank.backends.gpu_arrays`, :mod:`webrank.kernels.cuda_arrays`).

On a GPU, a fresh process with an empty CuPy cache loads a cnr-like file, ranks it with
every default engine and precision and runs the CLI; afterwards no kernel of CuPy's
(``cupy_*``) may be in that cache. Without a GPU, the host-side pieces that replaced
CuPy's operations are checked against what those operations computed (NumPy here)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import webrank
from webrank.backends.gpu import HEAVY_SEGMENT, cut_heavy_rows, heavy_segments
from webrank.blocking import plan_blocks
from webrank.build import Chunked, Pieces
from webrank.build_gpu import host_csr
from webrank.graph import Graph
from webrank.kernels import cuda_arrays

# -- on the host: the replacements compute what CuPy's operations did --------------------

edge_lists = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=1,
                      max_size=200)


def _same_arrays(got: dict, want: Graph) -> None:
    for key in ("indptr", "indices", "out_weight", "weights", "labels"):
        a, b = got[key], getattr(want, key)
        assert (a is None) == (b is None), key
        if a is not None:
            assert a.dtype == b.dtype, (key, a.dtype, b.dtype)
            np.testing.assert_array_equal(a, b, err_msg=key)


@settings(max_examples=80, deadline=None)
@given(edges=edge_lists, scale=st.sampled_from([1, 3, 10**12]), weighted=st.booleans(),
       node_ids=st.sampled_from(["appear", "range"]),
       duplicates=st.sampled_from(["collapse", "sum"]),
       form=st.sampled_from(["array", "pieces", "chunked"]), data=st.data())
def test_the_host_build_for_the_gpu_is_the_host_graph(edges, scale, weighted, node_ids,
                                                       duplicates, form, data):
    """Graphs up to HOST_BUILD_EDGES links loaded for the GPU are built on the host by the
    parallel build (any id space: dense, sparse, hashes) and equal Graph.from_edges."""
    if node_ids == "range" and scale > 3:
        node_ids = "appear"
    src = np.array([s for s, _ in edges], np.int64) * scale
    dst = np.array([d for _, d in edges], np.int64) * scale
    w = (np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5]),
                                     min_size=src.size, max_size=src.size)))
         if weighted else None)
    want = Graph.from_edges(src, dst, w, node_ids=node_ids, duplicates=duplicates)
    cut = src.size // 2
    if form == "pieces":  # as pyarrow's record batches come
        cols = [Pieces([c[:cut], c[cut:]]) for c in (src, dst)]
        cols.append(None if w is None else Pieces([w[:cut], w[cut:]]))
    elif form == "chunked":  # as the parallel reader's chunks come (with a gap)
        starts, counts = np.array([0, cut + 3]), np.array([cut, src.size - cut])

        def chunked(c):
            return Chunked(np.concatenate([c[:cut], np.zeros(3, c.dtype), c[cut:]]),
                           starts, counts)

        cols = [chunked(src), chunked(dst), None if w is None else chunked(w)]
    else:
        cols = [src, dst, w]
    got = host_csr(*cols, num_nodes=None, node_ids=node_ids, labels=None,
                   duplicates=duplicates, name=None)
    _same_arrays(got, want)


def test_the_host_build_for_the_gpu_takes_labels_and_a_node_count():
    src, dst = np.array([0, 2, 2, 1]), np.array([1, 1, 0, 2])
    labels = np.array(["a", "b", "c", "d"])  # "d": a node without links
    got = host_csr(src, dst, None, num_nodes=None, node_ids="appear", labels=labels,
                   duplicates="collapse", name=None)
    _same_arrays(got, Graph.from_edges(src, dst, labels=labels))
    got = host_csr(src, dst, None, num_nodes=7, node_ids="range", labels=None,
                   duplicates="collapse", name=None)
    _same_arrays(got, Graph.from_edges(src, dst, num_nodes=7))
    with pytest.raises(webrank.GraphFormatError, match="out of range"):
        host_csr(src, dst, None, num_nodes=2, node_ids="range", labels=None,
                 duplicates="collapse", name="g")


def _heavy_segments_before(indptr, threshold, head=None):
    """What heavy_segments computed before (CuPy's diff, comparisons, mask, mean)."""
    deg = np.diff(indptr)
    heavy = deg > threshold
    light = deg[~heavy]
    light_mean = float(light.mean()) if light.size else 1.0
    rows = np.flatnonzero(heavy).astype(np.int64)
    row_begin = indptr[rows].astype(np.int64)
    row_deg = deg[rows].astype(np.int64)
    covered = row_deg if head is None else np.minimum(row_deg, head)
    nseg = -(-covered // HEAVY_SEGMENT)
    slot = np.repeat(np.arange(rows.size), nseg)
    first = np.cumsum(nseg) - nseg
    within = np.arange(slot.size) - np.repeat(first, nseg)
    begin = row_begin[slot] + within * HEAVY_SEGMENT
    end = np.minimum(begin + HEAVY_SEGMENT, (row_begin + covered)[slot])
    return {"seg_row": rows[slot], "begin": begin.astype(indptr.dtype),
            "end": end.astype(indptr.dtype), "n_heavy": int(rows.size),
            "light_mean": light_mean}


def _kernels_heavy_rows(indptr, threshold, rng):
    """What wr_heavy_count and wr_heavy_collect leave (the rows in any order), and the
    host's sort of them (webrank.backends.gpu_arrays.heavy_rows)."""
    from webrank.backends.gpu_arrays import sorted_by_row

    deg = np.diff(indptr).astype(np.int64)
    found = np.flatnonzero(deg > threshold)
    found = found[rng.permutation(found.size)]  # atomically claimed slots
    light_links = int(deg[deg <= threshold].sum())
    rows, begin, d = sorted_by_row(found.astype(np.int64), indptr[found].astype(np.int64),
                                   deg[found])
    return rows, begin, d, light_links, int(deg.size - found.size)


def _same_segments(got, want):
    assert got.keys() == want.keys()
    for key in ("seg_row", "begin", "end"):
        assert got[key].dtype == want[key].dtype, key
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    assert got["n_heavy"] == want["n_heavy"]
    assert got["light_mean"] == want["light_mean"]  # the same bits


@pytest.mark.parametrize("threshold", [0, 3, 64, 10**6])
@pytest.mark.parametrize("head", [None, 1, 100])
@pytest.mark.parametrize("ptr", ["int32", "int64"])
def test_heavy_rows_split_on_the_host_as_on_the_device_before(rng, threshold, head, ptr):
    from test_hybrid import hub_graph

    g = hub_graph(False, n=5000, m=80000)
    indptr = g.indptr.astype(ptr)
    want = _heavy_segments_before(indptr, threshold, head)
    _same_segments(heavy_segments(indptr, threshold, head), want)
    found = _kernels_heavy_rows(indptr, threshold, rng)
    _same_segments(cut_heavy_rows(*found, head, indptr.dtype), want)


def test_out_degree_keys_give_the_stable_order_of_decreasing_out_degree(rng):
    """wr_degree_keys, a sort of the keys and wr_order_positions / wr_relabel (emulated)
    give what cupy.argsort(-bincount) and the scatter did."""
    n = 3000
    indices = np.minimum((rng.pareto(0.9, 40000) * 4).astype(np.int32), n - 1)
    counts = np.bincount(indices, minlength=n).astype(np.int32)
    keys = ((0x7FFFFFFF - counts.astype(np.int64)) << 32) | np.arange(n, dtype=np.int64)
    keys.sort()
    pos = np.empty(n, np.int32)
    pos[keys & 0xFFFFFFFF] = np.arange(n, dtype=np.int32)
    order = np.argsort(-counts.astype(np.int64), kind="stable")
    want = np.empty(n, np.int32)
    want[order] = np.arange(n, dtype=np.int32)
    np.testing.assert_array_equal(pos, want)
    np.testing.assert_array_equal(pos[indices], want[indices])


def test_a_plan_cut_by_another_searchsorted_is_the_same_plan(rng):
    """The blocked engine's plan with the row bounds found by a kernel of ours (here:
    NumPy, as it returns them) is the plan of the array module's searchsorted."""
    from test_blocking import random_graph

    g = random_graph(rng, 20000, 150000)
    calls = []

    def search(ptr, targets):
        calls.append(targets.dtype)
        return np.searchsorted(ptr, targets, side="left")

    for kw in ({}, {"row_begin": 300, "row_end": 17000}):
        a = plan_blocks(g.indptr, n_src=g.n, part_rows_max=700, workers=8, **kw)
        b = plan_blocks(g.indptr, n_src=g.n, part_rows_max=700, workers=8,
                        searchsorted=search, **kw)
        np.testing.assert_array_equal(a.part_ptr, b.part_ptr)
        assert (a.chunk_bits, a.tile_entries) == (b.chunk_bits, b.tile_entries)
    assert calls == [np.dtype(np.int64)] * 2


def test_the_operators_uniform_start_and_normalisation_on_the_cpu():
    g = Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1])
    from webrank.backends import make_operator

    op = make_operator(g, device="cpu", alpha=0.85, personalization=None, dangling=None,
                       dtype="float64")
    np.testing.assert_array_equal(op.full(0.25), np.full(3, 0.25))
    np.testing.assert_array_equal(op.normalized(np.array([1.0, 3.0])), [0.25, 0.75])
    z = np.zeros(2)
    assert op.normalized(z) is z


def test_the_array_kernels_are_listed_and_their_arguments_read():
    names = cuda_arrays.instantiations()
    assert len(names) == len(set(names)) and "wr_sums_total" in names
    for base in re.findall(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)",
                           cuda_arrays.SOURCE):
        assert any(n == base or n.startswith(base + "<") for n in names), base
    assert cuda_arrays.SUMS_BLOCKS.names == ("n", "x", "has_mask", "mask", "partial")


def test_every_launch_of_an_array_kernel_names_its_parameters():
    """(static) each ``cuda_arrays.X.pack(...)`` in the backends gives exactly the
    parameters of X's kernel."""
    import ast

    records = {name: rec for name, rec in vars(cuda_arrays).items()
               if type(rec).__name__ == "KernelArgs"}
    calls = 0
    for path in (Path(webrank.__file__).parent / "backends").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "pack"
                    and isinstance(node.func.value, ast.Attribute)
                    and getattr(node.func.value.value, "id", None) == "ka"):
                given = {k.arg for k in node.keywords}
                assert given == set(records[node.func.value.attr].names), (path.name,
                                                                          node.lineno)
                calls += 1
    assert calls >= 12


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_the_array_kernels_compile_for_sm90(tmp_path):
    body = "".join(f"    (void)&{n};\n" for n in cuda_arrays.instantiations())
    cu = tmp_path / "arrays.cu"
    cu.write_text(f"{cuda_arrays.SOURCE}\nvoid wr_instantiate_all() {{\n{body}}}\n")
    out = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-c", "-o", f"{cu}.o",
                          str(cu)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-4000:]


# -- on a GPU: the kernels' build, and a fresh process compiling none of CuPy's kernels ---

def _kernel_build_cases():
    rng = np.random.default_rng(7)
    tile = cuda_arrays.TILE
    for m, ids, dup in ((1, 5, 1), (7, 3, 1), (3 * tile + 7, 50, 1), (2 * tile, 40_000, 3),
                        (300_000, 60_000, 2), (tile - 1, 2 * tile + 1, 1)):
        src = rng.integers(0, ids, m // dup + 1)
        dst = np.minimum((rng.pareto(0.8, src.size) * 5).astype(np.int64), ids - 1)
        src, dst = np.repeat(src, dup)[:m], np.repeat(dst, dup)[:m]  # runs of repeats
        yield m, src * 3 + 2, dst * 3 + 2  # ids with gaps: renumbered


@pytest.mark.gpu
@pytest.mark.parametrize("duplicates", ["collapse", "sum"])
@pytest.mark.parametrize("node_ids", ["appear", "range"])
def test_the_kernel_build_on_the_device_is_the_host_graph(duplicates, node_ids):
    pytest.importorskip("cupy")
    from webrank.build_gpu import edge_csr_on_device

    for m, src, dst in _kernel_build_cases():
        num = None if node_ids == "appear" else int(max(src.max(), dst.max())) + 4097
        want = Graph.from_edges(src, dst, num_nodes=num, node_ids=node_ids,
                                duplicates=duplicates)
        got = edge_csr_on_device(Pieces([src[: m // 2], src[m // 2:]]), Pieces([dst]), None,
                                 num_nodes=num, node_ids=node_ids, labels=None,
                                 duplicates=duplicates, name=None)
        host = {k: v.get() if hasattr(v, "get") and not isinstance(v, np.ndarray) else v
                for k, v in got.items()}
        _same_arrays(host, want)


def _chunked_with_gaps(c, pieces, rng):
    """``c`` as a parallel parse leaves it: ``pieces`` chunks in one array, unused slots
    (holding garbage) between them."""
    cuts = np.unique(np.concatenate([[0, c.size], rng.integers(0, c.size, pieces - 1)]))
    gaps = rng.integers(0, 5, cuts.size - 1)
    starts = cuts[:-1] + np.cumsum(gaps)
    data = np.full(c.size + int(gaps.sum()), 2**31 - 1, c.dtype)
    for a, b, s in zip(cuts[:-1], cuts[1:], starts, strict=True):
        data[s:s + b - a] = c[a:b]
    return data, starts, np.diff(cuts)


@pytest.mark.gpu
@pytest.mark.parametrize("duplicates", ["collapse", "sum"])
@pytest.mark.parametrize("node_ids", ["appear", "range", "labels"])
def test_a_parallel_parses_chunks_are_built_on_the_device(rng, duplicates, node_ids):
    """The int32 chunks of a plain file go up as they are (through the staging buffers
    from 16 MiB on) and the card's build makes the host's graph; ids spread far beyond
    the links, and an id past num_nodes, behave as on the host."""
    cp = pytest.importorskip("cupy")
    from webrank.build_gpu import edge_csr_on_device

    cases = [(m, src, dst) for m, src, dst in _kernel_build_cases()]
    big = 5_000_000  # 40 MB of int32 ids a column: the page-locked path
    cases.append((big, rng.integers(0, 900_000, big), rng.integers(0, 1_000_000, big)))
    cases.append((500, rng.integers(0, 10, 500) * 10**5, rng.integers(0, 10, 500)))  # sparse
    for m, src, dst in cases:
        src, dst = src.astype(np.int32), dst.astype(np.int32)
        hi = int(max(src.max(), dst.max()))
        num = hi + 4097 if node_ids == "range" else None
        labels = np.arange(hi + 3).astype(str) if node_ids == "labels" else None
        how = {"num_nodes": num, "labels": labels,
               "node_ids": "range" if node_ids == "range" else "appear"}
        want = Graph.from_edges(src, dst, duplicates=duplicates, **how)
        data, starts, counts = _chunked_with_gaps(src, 1 + m // 40_000, rng)
        dst_data = np.full(data.size, 2**31 - 1, np.int32)
        for a, s, c in zip(np.cumsum(counts) - counts, starts, counts, strict=True):
            dst_data[s:s + c] = dst[a:a + c]
        bounds = (int(min(src.min(), dst.min())), hi)
        got = edge_csr_on_device(Chunked(data, starts, counts, bounds),
                                 Chunked(dst_data, starts, counts, bounds), None,
                                 duplicates=duplicates, name=None, **how)
        assert isinstance(got["indices"], cp.ndarray)
        _same_arrays({k: v.get() if isinstance(v, cp.ndarray) else v for k, v in got.items()},
                     want)
    if node_ids == "range":
        with pytest.raises(webrank.GraphFormatError, match="out of range"):
            edge_csr_on_device(Chunked(data, starts, counts, bounds),
                               Chunked(dst_data, starts, counts, bounds), None,
                               num_nodes=hi, node_ids="range", labels=None,
                               duplicates=duplicates, name="g")


@pytest.mark.gpu
def test_parts_go_up_end_to_end_through_the_staging_buffers(rng):
    """Parts cut anywhere against the slices (here 4 KiB) land end to end."""
    cp = pytest.importorskip("cupy")
    from webrank.kernels.cuda_staging import Staging, upload

    staging = Staging(0)
    staging.step = 1 << 12
    parts = [rng.integers(0, 2**31, k).astype(np.int32)
             for k in (0, 1, 1023, 1024, 1025, 3000, 7, 0, 4096, 10_000)]
    out = cp.empty(sum(p.size for p in parts), dtype=cp.int32)
    staging.copy_up(parts, out)
    np.testing.assert_array_equal(out.get(), np.concatenate(parts))
    with pytest.raises(ValueError, match="differ in size"):
        staging.copy_up(parts, out[1:])
    big = [rng.random(3_000_001), rng.random(1), rng.random(2_500_000)]  # 44 MB
    np.testing.assert_array_equal(upload(big).get(), np.concatenate(big))
    np.testing.assert_array_equal(upload([p for p in parts if p.size]).get(),
                                  np.concatenate(parts))


@pytest.mark.gpu
@pytest.mark.parametrize("dtypes", [("int32", "int32"), ("int32", "int64"),
                                    ("int64", "int64")])
def test_the_kernel_merge_of_device_links(dtypes):
    cp = pytest.importorskip("cupy")
    from webrank.backends.gpu_build import graph_on_device

    for _m, src, dst in _kernel_build_cases():
        n = int(max(src.max(), dst.max())) + 1
        for duplicates in ("collapse", "sum"):
            want = Graph.from_edges(src, dst, num_nodes=n, duplicates=duplicates)
            g = graph_on_device(cp.asarray(src, dtype=dtypes[0]),
                                cp.asarray(dst, dtype=dtypes[1]), n, duplicates=duplicates)
            got = g.to_host()
            _same_arrays({k: getattr(got, k) for k in ("indptr", "indices", "out_weight",
                                                       "weights", "labels")}, want)


@pytest.mark.gpu
@pytest.mark.parametrize("ix", ["int32", "int64"])
def test_the_sent_rows_are_numbered_in_row_order(rng, ix):
    """A partitioned run's exchange slots (webrank.distributed.placement): the rows with
    out-links numbered in order from ``first``, every other row given ``zero``, and the
    rows themselves; across tile edges and with no row sent at all."""
    cp = pytest.importorskip("cupy")
    from webrank.backends.gpu_arrays import rebase, sent_count, sent_slots

    tile = cuda_arrays.TILE
    for n in (0, 1, tile - 1, tile, tile + 1, 3 * tile + 5, 200_003):
        for share in (0.0, 0.5, 1.0):
            ow = np.where(rng.random(n) < share, rng.integers(1, 9, n), 0).astype(np.float64)
            first, zero = 17, 10**6
            counted = sent_count(cp.asarray(ow))
            slot = cp.full(n + 2, -1, dtype=ix)
            rows = sent_slots(cp.asarray(ow), counted, first, zero, slot[1:n + 1])
            want_rows = np.flatnonzero(ow > 0)
            want = np.full(n, zero)
            want[want_rows] = first + np.arange(want_rows.size)
            assert counted[1] == want_rows.size and rows.dtype == np.dtype(ix)
            np.testing.assert_array_equal(rows.get(), want_rows)
            np.testing.assert_array_equal(slot.get(), np.r_[-1, want, -1])
    ptr = np.cumsum(rng.integers(0, 5, 1001)) + 2**33
    got = rebase(cp.asarray(ptr[100:600]), int(ptr[100]), np.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.get(), ptr[100:600] - ptr[100])


# -- on a GPU: a fresh process compiles none of CuPy's kernels ----------------------------

_FIRST_RUN = textwrap.dedent("""
    import sys

    import numpy as np

    import webrank

    path, weighted_path = sys.argv[1:3]
    g = webrank.load(path, device="gpu")
    assert g.on_gpu, "the graph was not put on the device"
    host = webrank.load(path)
    ref = webrank.pagerank(host, device="cpu", tol=1e-12, method="power").scores
    runs = [dict(engine=e, dtype=t) for e in ("auto", "pull", "persistent", "blocked")
            for t in ("float64", "float32")]
    runs.append(dict(engine="pull", engine_options={"reorder": "out-degree"}))
    runs.append(dict(engine="persistent", engine_options={"reorder": "out-degree"},
                     dtype="float32"))
    for kw in runs:
        r = webrank.pagerank(g, device="gpu", tol=1e-10, **kw)
        err = float(np.abs(r.scores - ref).sum())
        print(kw, r.info.get("engine"), r.iterations, f"{err:.2e}")
        assert r.converged and err < (1e-6 if kw.get("dtype") == "float32" else 1e-8), kw
    # a host graph ranked on the GPU, a path given to pagerank, a weighted file
    assert np.abs(webrank.pagerank(host, device="gpu", tol=1e-10).scores - ref).sum() < 1e-8
    webrank.pagerank(path, device="gpu")
    gw = webrank.load(weighted_path, device="gpu", weighted=True)
    refw = webrank.pagerank(webrank.load(weighted_path, weighted=True), device="cpu",
                            tol=1e-12, method="power").scores
    for kw in (dict(engine="pull"), dict(engine="blocked", dtype="float32"), {}):
        r = webrank.pagerank(gw, device="gpu", tol=1e-10, **kw)
        assert np.abs(r.scores - refw).sum() < (1e-6 if "dtype" in kw else 1e-8), kw
    print("first run done")
""")


def _cnr_like(tmp: Path) -> tuple[Path, Path]:
    """A web graph shaped like cnr-2000, smaller: links sorted by source, in-degrees with
    a heavy tail (rows past the split threshold), dangling and isolated ids, a gzipped
    tab-separated edge list; and a weighted copy."""
    from webrank.io import write_edgelist

    rng = np.random.default_rng(2000)
    n, m = 60_000, 600_000
    src = np.sort(rng.integers(0, n - 6000, m))  # the last ids link nowhere
    dst = np.where(rng.random(m) < 0.7, (src + rng.integers(-50, 50, m)) % n,
                   np.minimum((rng.pareto(0.7, m) * 3).astype(np.int64), n - 1))
    g = Graph.from_edges(src, dst, node_ids="range", num_nodes=n)
    path = tmp / "cnr-like.txt.gz"
    write_edgelist(g, path)
    gw = Graph.from_edges(src, dst, rng.uniform(0.5, 2.0, m), node_ids="range",
                          num_nodes=n)
    weighted = tmp / "cnr-like-weighted.txt"
    write_edgelist(gw, weighted)
    return path, weighted


def _cupy_kernels(cache: Path) -> dict[str, list[str]]:
    """CuPy's kernels in a CuPy cache directory: file -> the ``cupy_*`` names in it (the
    cubins hold their kernels' symbols; with CUPY_CACHE_SAVE_CUDA_SOURCE the sources are
    there too). webrank's kernels are named ``wr_*``."""
    found = {}
    for f in sorted(cache.rglob("*")):
        if f.is_file():
            names = sorted({m.decode() for m in re.findall(rb"cupy_[A-Za-z0-9_]+",
                                                            f.read_bytes())})
            if names:
                found[f.name] = names
    return found


@pytest.mark.gpu
def test_a_first_gpu_run_compiles_none_of_cupys_kernels(tmp_path):
    pytest.importorskip("cupy")
    from webrank.backends import gpu_available

    if not gpu_available():
        pytest.skip("no usable GPU (CuPy + CUDA device)")
    path, weighted = _cnr_like(tmp_path)
    cache = tmp_path / "cupy-cache"
    cache.mkdir()
    env = dict(os.environ)
    env.pop("CUPY_CACHE_IN_MEMORY", None)
    env.update(CUPY_CACHE_DIR=str(cache), CUPY_CACHE_SAVE_CUDA_SOURCE="1",
               PYTHONPATH=os.pathsep.join([str(Path(webrank.__file__).parents[1]),
                                           env.get("PYTHONPATH", "")]))
    script = tmp_path / "first_run.py"
    script.write_text(_FIRST_RUN)
    runs = [[sys.executable, str(script), str(path), str(weighted)],
            [sys.executable, "-m", "webrank", "rank", str(path), "--device", "gpu",
             "-o", str(tmp_path / "ranks.csv")],
            [sys.executable, "-m", "webrank", "rank", str(path), "--device", "gpu",
             "--dtype", "float32", "--engine", "blocked", "--json"]]
    for cmd in runs:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, (cmd[1:], out.stdout[-3000:], out.stderr[-3000:])
    assert (tmp_path / "ranks.csv").stat().st_size > 0
    compiled = _cupy_kernels(cache)
    listing = "\n".join(f"  {f}: {', '.join(names)}" for f, names in compiled.items())
    assert not compiled, f"CuPy compiled its own kernels in a first GPU run:\n{listing}"
