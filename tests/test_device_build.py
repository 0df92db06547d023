"""Graphs built where they run (``device="gpu"``): parsed on the host, the CSR built on
the card from the parsed columns (webrank.build_gpu). The build's steps run with NumPy
in CI (the same code, ``xp=numpy``) and are checked against the host build; on a GPU the
whole path, file to ranks, is checked against the CPU's (hypothesis: duplicates,
self-loops, dense, sparse and string ids, weights with zeros, headers, gzip)."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import webrank
from webrank.build_gpu import edge_csr_on_device
from webrank.graph import Graph
from webrank.io.edgelist import read_edge_columns

edge_lists = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), min_size=1,
                      max_size=150)
weights_of = st.sampled_from([0.0, 0.5, 1.0, 2.5])


def same_graph(got: dict | Graph, want: Graph) -> None:
    for key in ("indptr", "indices", "out_weight", "weights", "labels"):
        a = got[key] if isinstance(got, dict) else getattr(got, key)
        b = getattr(want, key)
        assert (a is None) == (b is None), key
        if a is None:
            continue
        a = a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else a
        assert a.dtype == b.dtype, (key, a.dtype, b.dtype)
        if key in ("weights", "out_weight"):  # "sum" adds weights in another order
            np.testing.assert_allclose(a, b, rtol=1e-15, err_msg=key)
        else:
            np.testing.assert_array_equal(a, b, err_msg=key)


@settings(max_examples=60, deadline=None)
@given(edges=edge_lists, scale=st.sampled_from([1, 3, 10**12]), weighted=st.booleans(),
       node_ids=st.sampled_from(["appear", "range"]),
       duplicates=st.sampled_from(["collapse", "sum"]), data=st.data())
def test_device_build_steps_give_the_host_graph(edges, scale, weighted, node_ids,
                                                duplicates, data):
    if node_ids == "range" and scale > 3:
        node_ids = "appear"  # a range of 10**13 nodes is refused either way
    src = np.array([s for s, _ in edges], np.int64) * scale
    dst = np.array([d for _, d in edges], np.int64) * scale
    w = (np.array(data.draw(st.lists(weights_of, min_size=src.size, max_size=src.size)))
         if weighted else None)
    want = Graph.from_edges(src, dst, w, node_ids=node_ids, duplicates=duplicates)
    got = edge_csr_on_device(src, dst, w, num_nodes=None, node_ids=node_ids, labels=None,
                             duplicates=duplicates, name=None, xp=np)
    same_graph(got, want)


def test_device_build_keeps_the_last_weight_of_a_repeated_link():
    src, dst = np.array([0, 0, 1, 0]), np.array([1, 1, 0, 1])
    w = np.array([0.5, 0.0, 1.0, 3.0])
    got = edge_csr_on_device(src, dst, w, num_nodes=None, node_ids="appear", labels=None,
                             duplicates="collapse", name=None, xp=np)
    np.testing.assert_array_equal(got["weights"], [1.0, 3.0])  # rows 0 <- 1, 1 <- 0
    got = edge_csr_on_device(src, dst, w, num_nodes=None, node_ids="appear", labels=None,
                             duplicates="sum", name=None, xp=np)
    np.testing.assert_array_equal(got["weights"], [1.0, 3.5])


def test_device_build_hands_weighted_links_past_its_limit_to_the_host(monkeypatch):
    # the weighted merge runs below 2**31 links: past it the caller builds on the host
    # (None), rather than failing half-way on the card
    import webrank.build_gpu as build_gpu

    monkeypatch.setattr(build_gpu, "_MAX_NODES", 3)
    src, dst, w = np.array([0, 0, 1, 2]), np.array([1, 2, 0, 0]), np.ones(4)
    assert edge_csr_on_device(src, dst, w, num_nodes=None, node_ids="appear", labels=None,
                              duplicates="collapse", name=None, xp=np) is None
    host = edge_csr_on_device(src, dst, None, num_nodes=None, node_ids="range",
                              labels=None, duplicates="collapse", name=None, xp=np)
    assert host is not None  # unweighted links merge on the card at any count


def test_device_build_refuses_ids_out_of_range():
    with pytest.raises(webrank.GraphFormatError, match="out of range"):
        edge_csr_on_device(np.array([0, 7]), np.array([1, 2]), None, num_nodes=5,
                           node_ids="range", labels=None, duplicates="collapse",
                           name="g", xp=np)
    with pytest.raises(webrank.GraphFormatError, match="out of range"):
        edge_csr_on_device(np.array([0, 3]), np.array([1, 2]), None, num_nodes=None,
                           node_ids="appear", labels=np.array(["a", "b", "c"]),
                           duplicates="collapse", name="g", xp=np)


def write_edge_file(tmp, name, src, dst, w, header, sep=None) -> object:
    """``name`` in ``tmp``: one ``src dst [weight]`` line per edge (comma-separated for a
    .csv, else tab unless ``sep`` says), a header first, gzip for a .gz name."""
    sep = sep or ("," if ".csv" in name else "\t")
    lines = [sep.join([str(a), str(b)] + ([repr(float(c))] if w is not None else []))
             for a, b, c in zip(src, dst, w if w is not None else src, strict=True)]
    head = sep.join(["src", "dst"] + (["weight"] if w is not None else [])) + "\n"
    body = (head if header else "") + "\n".join(lines) + "\n"
    path = tmp / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(body.encode()))
    else:
        path.write_text(body)
    return path


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=edge_lists, scale=st.sampled_from([1, 10**12]), weighted=st.booleans(),
       name=st.sampled_from(["g.txt", "g.csv", "g.tsv.gz"]), header=st.booleans(),
       data=st.data())
def test_a_gpu_load_parses_the_columns_the_host_load_does(tmp_path_factory, edges, scale,
                                                           weighted, name, header, data):
    """A load for the GPU parses with pyarrow (not the parallel Numba reader): the same
    columns, so the same graph."""
    src = np.array([s for s, _ in edges], np.int64) * scale
    dst = np.array([d for _, d in edges], np.int64) * scale
    w = (np.array(data.draw(st.lists(weights_of, min_size=src.size, max_size=src.size)))
         if weighted else None)
    path = write_edge_file(tmp_path_factory.mktemp("cols"), name, src, dst, w, header)
    host = webrank.load(path)
    cols = read_edge_columns(path, device="gpu")
    same_graph(Graph.from_edges(*cols[:3], labels=cols[3], name=str(path)), host)
    s, d, wt, labels = cols
    got = edge_csr_on_device(s, d, wt, num_nodes=None, node_ids="appear", labels=labels,
                             duplicates="collapse", name=None, xp=np)
    same_graph(got, host)


# -- on a GPU --------------------------------------------------------------------------


def _gpu() -> bool:
    from webrank.backends import gpu_available

    return gpu_available()




@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="no usable GPU (CuPy + CUDA device)")
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=edge_lists, scale=st.sampled_from([1, 10**12]), weighted=st.booleans(),
       name=st.sampled_from(["g.txt", "g.csv", "g.tsv.gz"]), header=st.booleans(),
       duplicates=st.sampled_from(["collapse", "sum"]), data=st.data())
def test_gpu_load_is_the_host_graph_and_ranks_the_same(tmp_path_factory, edges, scale,
                                                       weighted, name, header, duplicates,
                                                       data):
    src = np.array([s for s, _ in edges], np.int64) * scale
    dst = np.array([d for _, d in edges], np.int64) * scale
    w = (np.array(data.draw(st.lists(weights_of, min_size=src.size, max_size=src.size)))
         if weighted else None)
    tmp = tmp_path_factory.mktemp("gpu_load")
    path = write_edge_file(tmp, name, src, dst, w, header)
    host = webrank.load(path, duplicates=duplicates)
    dev = webrank.load(path, duplicates=duplicates, device="gpu")
    assert dev.on_gpu
    same_graph(dev, host)
    a = webrank.pagerank(dev, tol=1e-12, method="power", device="gpu")
    b = webrank.pagerank(host, tol=1e-12, method="power", device="cpu")
    assert np.array_equal(np.asarray(a.labels), np.asarray(b.labels))
    assert np.abs(a.scores - b.scores).sum() < 1e-9
    webrank.io.save_graph(host, tmp / "g.npz")
    same_graph(webrank.load(tmp / "g.npz", device="gpu"), host)


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="no usable GPU (CuPy + CUDA device)")
def test_gpu_load_of_string_labels_and_the_cli(tmp_path):
    from click.testing import CliRunner

    from webrank.cli import cli

    path = tmp_path / "urls.tsv"
    path.write_text("http://a\thttp://b\nhttp://b\thttp://c\nhttp://c\thttp://a\n"
                    "http://c\thttp://b\nhttp://d\thttp://a\n")
    host = webrank.load(path, labels="string")
    same_graph(webrank.load(path, labels="string", device="gpu"), host)
    runner = CliRunner()
    out = {}
    for device in ("cpu", "gpu"):
        res = runner.invoke(cli, ["rank", str(path), "--labels", "string", "--device",
                                  device, "--tol", "1e-12", "-o", str(tmp_path / f"{device}.csv")])
        assert res.exit_code == 0, res.output
        out[device] = (tmp_path / f"{device}.csv").read_text().splitlines()
    cpu = dict(line.split(",") for line in out["cpu"][1:])
    dev = dict(line.split(",") for line in out["gpu"][1:])
    assert cpu.keys() == dev.keys()
    assert sum(abs(float(cpu[k]) - float(dev[k])) for k in cpu) < 1e-9
