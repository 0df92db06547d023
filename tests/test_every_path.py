"""Every path, one answer: the same edges through every way into webrank (a text file
of each flavour, Parquet, a pandas or pyarrow table, the .npz cache, SciPy, the
partitioned reader, the networkx backend, and on a GPU each engine and gpus=2) give the
same node set and the same scores
(hypothesis: sparse, huge and string ids, headers, duplicates, self-loops, zero
weights, dangling and isolated nodes). The MPI runs of the same definition are in
tests/test_distributed.py (mpirun -n 2 and -n 3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_device_build import write_edge_file

import webrank
from webrank.graph import Graph

TOL = 1e-12


def scores_by_label(r) -> dict:
    return dict(zip(np.asarray(r.labels).tolist(), r.scores.tolist(), strict=True))


def same_answer(a: dict, b: dict, what: str) -> None:
    assert a.keys() == b.keys(), (what, sorted(set(a) ^ set(b))[:5])
    err = sum(abs(a[k] - b[k]) for k in a)
    assert err < 1e-9, (what, err)


def rank(g: Graph) -> dict:
    return scores_by_label(webrank.pagerank(g, tol=TOL, method="power", device="cpu"))


edge_lists = st.lists(st.tuples(st.integers(0, 25), st.integers(0, 25)), min_size=1,
                      max_size=120)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=edge_lists, scale=st.sampled_from([1, 7, 10**12]),
       weighted=st.booleans(), data=st.data(),
       text=st.sampled_from([("g.txt", "\t", False), ("g.csv", ",", True),
                             ("g.tsv.gz", "\t", True), ("g.el", " ", False)]))
def test_integer_ids_on_every_path(tmp_path_factory, edges, scale, weighted, data, text):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = tmp_path_factory.mktemp("paths")
    src = np.array([s for s, _ in edges], np.int64) * scale
    dst = np.array([d for _, d in edges], np.int64) * scale
    w = (np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]),
                                     min_size=len(edges), max_size=len(edges))))
         if weighted else None)
    name, sep, header = text
    path = write_edge_file(tmp, name, src, dst, w, header, sep)
    lines = [sep.join([str(a), str(b)] + ([repr(float(c))] if weighted else []))
             for a, b, c in zip(src, dst, w if weighted else src, strict=True)]

    ref = rank(webrank.load(path))  # the definition: a file read by webrank.load
    cols = {"src": src, "dst": dst, **({"weight": w} if weighted else {})}
    wcol = "weight" if weighted else None
    same_answer(rank(Graph.from_dataframe(pd.DataFrame(cols), "src", "dst", wcol)), ref,
                "pandas")
    same_answer(rank(Graph.from_dataframe(pa.table(cols), "src", "dst", wcol)), ref,
                "pyarrow")
    pq.write_table(pa.table(cols), tmp / "g.parquet")
    same_answer(rank(webrank.load(tmp / "g.parquet")), ref, "parquet")
    webrank.io.save_graph(webrank.load(path), tmp / "g.npz")
    same_answer(rank(webrank.load(tmp / "g.npz")), ref, "npz cache")
    edge_file = tmp / "plain.txt"  # the partitioned reader (one rank here; MPI elsewhere)
    edge_file.write_text("\n".join(lines) + "\n")
    from webrank.distributed.run import distributed_pagerank

    r = distributed_pagerank([edge_file], tol=TOL, method="power", top=0)
    labels = r.info["labels"]
    labels = np.arange(r.n) if labels is None else labels
    same_answer(dict(zip(labels.tolist(), r.scores.tolist(), strict=True)), ref,
                "partitioned reader")
    if scale == 1:  # a matrix: nodes 0..max id, as node_ids="range"
        import scipy.sparse as sp

        n = int(max(src.max(), dst.max())) + 1
        g_range = webrank.load(path, node_ids="range", duplicates="sum")
        a = sp.coo_array((w if weighted else np.ones(src.size), (src, dst)), shape=(n, n))
        same_answer(rank(Graph.from_scipy(a)), rank(g_range), "scipy")


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=st.lists(st.tuples(st.sampled_from(["a", "b", "c", "http://x/1", "ü", "9"]),
                                st.sampled_from(["a", "b", "d", "http://x/2", "ü"])),
                      min_size=1, max_size=60))
def test_string_labels_on_every_path(tmp_path_factory, edges):
    import pandas as pd
    import polars as pl

    tmp = tmp_path_factory.mktemp("labels")
    path = tmp / "g.tsv"
    path.write_text("".join(f"{a}\t{b}\n" for a, b in edges), encoding="utf-8")
    ref = rank(webrank.load(path, labels="string"))
    cols = {"src": [a for a, _ in edges], "dst": [b for _, b in edges]}
    same_answer(rank(Graph.from_dataframe(pd.DataFrame(cols), "src", "dst")), ref, "pandas")
    same_answer(rank(Graph.from_dataframe(pl.DataFrame(cols), "src", "dst")), ref, "polars")
    webrank.io.save_graph(webrank.load(path, labels="string"), tmp / "g.npz")
    same_answer(rank(webrank.load(tmp / "g.npz")), ref, "npz cache")


@settings(max_examples=20, deadline=None)
@given(edges=edge_lists, weighted=st.booleans(), data=st.data())
def test_networkx_backend_is_the_same_definition(edges, weighted, data):
    nx = pytest.importorskip("networkx")
    G = nx.DiGraph()
    for a, b in edges:
        G.add_edge(a, b, weight=data.draw(st.sampled_from([0.5, 1.0, 3.0])) if weighted
                   else 1.0)
    got = nx.pagerank(G, backend="webrank", tol=1e-13, max_iter=10_000)
    src, dst = zip(*G.edges(), strict=True)
    w = [G.edges[e]["weight"] for e in G.edges()] if weighted else None
    ref = rank(Graph.from_edges(np.array(src), np.array(dst), w))
    same_answer(got, ref, "networkx backend")


# -- the GPU paths (gpu-marked: run on the GPU machine) --------------------------------------
def _gpu_count() -> int:
    from webrank.backends import gpu_available

    if not gpu_available():
        return 0
    import cupy as cp

    return cp.cuda.runtime.getDeviceCount()


@pytest.mark.gpu
@pytest.mark.skipif(_gpu_count() == 0, reason="no usable GPU (CuPy + CUDA device)")
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=edge_lists, scale=st.sampled_from([1, 10**12]), weighted=st.booleans(),
       dtype=st.sampled_from(["float64", "float32"]), data=st.data())
def test_every_gpu_path_gives_the_cpu_answer(tmp_path_factory, edges, scale, weighted,
                                            dtype, data):
    """Each GPU engine, ``gpus=2`` (where two GPUs are), the GPU CLI, on the graph of a
    file as ``webrank.load`` reads it: the CPU's node set and scores."""
    from webrank.backends.gpu_engines import ENGINES

    src = np.array([s for s, _ in edges], np.int64) * scale
    dst = np.array([d for _, d in edges], np.int64) * scale
    w = (np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]),
                                     min_size=len(edges), max_size=len(edges))))
         if weighted else None)
    path = tmp_path_factory.mktemp("gpu_paths") / "g.txt"
    path.write_text("".join(f"{a} {b}" + (f" {float(c)!r}" if weighted else "") + "\n"
                            for a, b, c in zip(src, dst, w if weighted else src,
                                               strict=True)))
    g = webrank.load(path)
    ref = rank(g)
    # float32 gathers: the rounding of ~100 steps in single precision
    atol = 1e-9 if dtype == "float64" else 2e-5

    def close(got: dict, what: str) -> None:
        assert got.keys() == ref.keys(), what
        err = sum(abs(got[k] - ref[k]) for k in ref)
        assert err < atol, (what, err)

    for engine in ENGINES:
        r = webrank.pagerank(g, tol=TOL if dtype == "float64" else 1e-7, method="power",
                             device="gpu", engine=engine, dtype=dtype)
        close(scores_by_label(r), f"engine {engine}")
    for method in ("gmres", "fixed") if dtype == "float64" else ():
        close(scores_by_label(webrank.pagerank(g, tol=TOL, method=method, device="gpu")),
              method)
    if _gpu_count() >= 2:
        r = webrank.pagerank(g, tol=TOL if dtype == "float64" else 1e-7, method="power",
                             device="gpu", gpus=2, dtype=dtype)
        close(scores_by_label(r), "gpus=2")
