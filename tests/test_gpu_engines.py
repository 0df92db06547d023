"""The GPU engines (pull, blocked, persistent): the same answers as the CPU's float64
reference, the same step counts, the blocked layout built on the device equal to the
reference construction (GPU tests; they skip without a GPU)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import dataset
from test_blocking import random_graph

import webrank

ENGINES = ["pull", "blocked", "persistent"]
pytestmark = pytest.mark.gpu


def reference(g, **kw):
    return webrank.pagerank(g, device="cpu", tol=1e-13, **kw)


def _block_contents(layout, P):
    """Per block, its entries as a sorted list of (dst_local, src_local[, val])."""
    blk = np.asarray(layout.blk_ptr.get() if hasattr(layout.blk_ptr, "get") else
                     layout.blk_ptr)
    host = {k: (getattr(layout, k).get() if hasattr(getattr(layout, k), "get")
                else getattr(layout, k)) for k in ("src_local", "dst_local")}
    keys = host["dst_local"].astype(np.int64) << 16 | host["src_local"]
    return [np.sort(keys[blk[i]:blk[i + 1]]) for i in range(blk.size - 1)], blk


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layout_built_on_the_device_equals_the_reference(rng, weighted, dtype):
    import cupy as cp

    from webrank.backends.gpu import upload_csr
    from webrank.backends.gpu_blocked import build_on_device, part_major_blocks
    from webrank.blocking import build_blocked, plan_blocks

    g = random_graph(rng, 20000, 150000, weighted)
    csr = upload_csr(g)
    tv = g.transition_values()
    for rows, bits in ((24576, 14), (300, 7)):  # one chunk window, and many
        plan = plan_blocks(g.indptr, n_src=g.n, part_rows_max=rows, chunk_bits_max=bits,
                           workers=132)
        ref = build_blocked(g.indptr, g.indices, plan, tv)
        dev = build_on_device(csr, None if tv is None else cp.asarray(tv.astype(dtype)),
                              plan, np.dtype(dtype), 132)
        np.testing.assert_array_equal(dev.blk_ptr.get(), ref.blk_ptr)
        np.testing.assert_array_equal(dev.tile_ptr.get(), ref.tile_ptr)
        np.testing.assert_array_equal(dev.tile_chunk.get(), ref.tile_chunk)
        a, blk = _block_contents(dev, plan.num_parts)
        b, _ = _block_contents(ref, plan.num_parts)
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
        if weighted:  # the values travel with their entries
            key = lambda L: (L.dst_local.astype(np.int64) << 16) | L.src_local  # noqa: E731
            for i in range(blk.size - 1):
                s = slice(blk[i], blk[i + 1])
                kd, kr = key(dev)[s].get(), key(ref)[s]
                vd = dev.vals[s].get()[np.argsort(kd, kind="stable")]
                vr = ref.vals[s][np.argsort(kr, kind="stable")].astype(dtype)
                np.testing.assert_array_equal(vd, vr)
        table = part_major_blocks(dev.blk_ptr, plan.num_parts, plan.num_chunks).get()
        for p in (0, plan.num_parts - 1):
            for c in (0, plan.num_chunks - 1):
                assert table[p, c] == ref.blk_ptr[c * plan.num_parts + p]
                assert table[p + 1, c] == ref.blk_ptr[c * plan.num_parts + p + 1]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("weighted", [False, True])
def test_engines_match_the_cpu_reference(rng, engine, dtype, weighted):
    g = random_graph(rng, 30000, 300000, weighted)
    pers = rng.random(g.n)
    for kw in ({}, {"personalization": pers, "dangling": rng.random(g.n)}):
        ref = reference(g, **kw)
        r = webrank.pagerank(g, device="gpu", engine=engine, dtype=dtype, tol=1e-11, **kw)
        assert r.info["engine"] == engine
        assert r.converged
        err = np.abs(r.scores - ref.scores).sum()
        assert err < (1e-9 if dtype == "float64" else 1e-6), (engine, dtype, err)
        # the CPU's power steps: the same iteration (auto runs Gauss-Seidel there)
        cpu = webrank.pagerank(g, device="cpu", dtype=dtype, tol=1e-11, method="power", **kw)
        assert abs(r.iterations - cpu.iterations) <= 1


@pytest.mark.parametrize("engine", ["blocked", "persistent"])
@pytest.mark.parametrize("criterion", ["l1", "l2", "linf"])
def test_new_engines_every_criterion_and_exact_step_counts(rng, engine, criterion):
    g = random_graph(rng, 8000, 60000)
    a = webrank.pagerank(g, device="gpu", engine=engine, tol=1e-10, criterion=criterion)
    b = webrank.pagerank(g, device="gpu", engine="pull", tol=1e-10, criterion=criterion)
    assert abs(a.iterations - b.iterations) <= 1
    # the same residual history, up to the order of float additions
    k = int(np.count_nonzero(b.residuals > 1e-7))
    np.testing.assert_allclose(a.residuals[:k], b.residuals[:k], rtol=1e-6)
    # max_iter stops at exactly that step, through graph replays / launches of any size
    for opts in ({}, {"graph_steps": 4} if engine == "blocked" else {"launch_steps": 7}):
        r = webrank.pagerank(g, device="gpu", engine=engine, tol=1e-300, max_iter=75,
                             criterion=criterion, raise_on_nonconvergence=False,
                             engine_options=opts)
        assert r.iterations == 75 and r.residuals.size == 75 and not r.converged
    seen = []
    r = webrank.pagerank(g, device="gpu", engine=engine, tol=1e-10, criterion=criterion,
                         callback=lambda k, res: seen.append(k))
    assert seen and seen[-1] == r.iterations


@pytest.mark.parametrize("weighted", [False, True])
def test_persistent_staging_across_its_windows(rng, weighted):
    """The persistent kernel stages the in-links of 32 rows at a time, WR_STAGE (256) a
    pass: rows that cross passes, windows of many passes, empty rows, a last window of
    fewer than 32 rows and split rows between light ones all sum as the CPU's float64."""
    n = 32 * 157 + 13
    degree = rng.choice([0, 0, 1, 3, 31, 200, 300, 700], size=n)
    dst = np.repeat(np.arange(n), degree)
    src = rng.integers(0, n, dst.size)
    w = rng.random(dst.size) + 0.1 if weighted else None
    g = webrank.Graph.from_edges(src, dst, w)
    ref = reference(g)
    for threshold in (1000, 250, 8):  # no split row; the 300s and 700s; all but 0-3
        r = webrank.pagerank(g, device="gpu", engine="persistent", dtype="float64",
                             tol=1e-12, engine_options={"heavy_threshold": threshold})
        assert r.info["engine"] == "persistent" and r.converged
        assert np.abs(r.scores - ref.scores).sum() < 1e-10, (threshold, weighted)


@pytest.mark.parametrize("weighted", [False, True])
def test_persistent_split_rows_summed_by_many_warps(rng, weighted):
    """The persistent step's split rows: a row cut into hundreds of segments, summed by
    as many warps with atomics, rows of one segment, and a threshold that splits nearly
    every row. Every step's sums as the CPU's float64 over launches of a few steps; after
    a solve the per-row sums are zero again, so a second solve on the operator gives the
    same answer."""
    import cupy as cp

    from webrank.backends import EngineOptions, make_operator

    n = 20000
    degree = rng.choice([0, 2, 5, 70, 300, 600], size=n)
    degree[[7, 4000, 9000, 15000, n - 1]] = [120_000, 30_000, 5_000, 257, 256]
    dst = np.repeat(np.arange(n), degree)
    src = rng.integers(0, n, dst.size)
    w = rng.random(dst.size) + 0.1 if weighted else None
    g = webrank.Graph.from_edges(src, dst, w, num_nodes=n, node_ids="range")
    ref = reference(g)
    for opts in ({}, {"launch_steps": 3}, {"heavy_threshold": 4}):
        r = webrank.pagerank(g, device="gpu", engine="persistent", dtype="float64",
                             tol=1e-12, engine_options=opts)
        assert r.info["engine"] == "persistent" and r.converged
        assert np.abs(r.scores - ref.scores).sum() < 1e-10, (opts, weighted)
    op = make_operator(g, device="gpu", alpha=0.85, personalization=None, dangling=None,
                       dtype="float64", options=EngineOptions.from_call("persistent", {}))
    x0 = cp.full(n, 1.0 / n)
    first = op.power_steps(x0, tol=1e-12, max_steps=1000, criterion="l1")
    a = cp.asnumpy(first.x)
    assert int(cp.count_nonzero(op._pull.heavy_sum)) == 0
    again = op.power_steps(x0, tol=1e-12, max_steps=1000, criterion="l1")
    assert first.residuals.size == again.residuals.size
    np.testing.assert_allclose(cp.asnumpy(again.x), a, rtol=1e-12, atol=1e-15)
    assert np.abs(a - ref.scores).sum() < 1e-10


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_persistent_steps_see_every_write_of_the_step_before(rng, dtype):
    """The persistent kernel gathers with plain loads, which may hit L1, after each
    grid-wide barrier: a line left from an earlier step would make its iterate differ
    from the pull engine's, whose launches run the same row pass. Same steps, residuals
    and scores to rounding (the sums' atomics add in another order), with and without
    split rows (whose sums other blocks add); by default the persistent engine splits
    rows from PERSISTENT_HEAVY_THRESHOLD in-links on."""
    from webrank.backends.gpu import PERSISTENT_HEAVY_THRESHOLD

    graphs = [webrank.load(dataset("cnr-2000")), random_graph(rng, 30000, 400000)]
    close = 1e-13 if dtype == "float64" else 1e-8
    for g in graphs:
        default = webrank.pagerank(g, engine="persistent", device="gpu", dtype=dtype)
        assert default.info["heavy_threshold"] == PERSISTENT_HEAVY_THRESHOLD
        for opts in ({"heavy_threshold": 64}, {"heavy_threshold": 8}):
            kw = dict(device="gpu", dtype=dtype, tol=1e-12, engine_options=opts)
            a = webrank.pagerank(g, engine="persistent", **kw)
            b = webrank.pagerank(g, engine="pull", **kw)
            assert a.info["engine"] == "persistent" and abs(a.iterations - b.iterations) <= 1
            k = int(np.count_nonzero(b.residuals > 1e-7))
            np.testing.assert_allclose(a.residuals[:k], b.residuals[:k], rtol=1e-6)
            assert np.abs(a.scores - b.scores).sum() < close, (g.n, opts)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["web-NotreDame", "cnr-2000"])
@pytest.mark.parametrize("engine", ENGINES)
def test_real_graphs_accuracy(name, engine):
    g = webrank.load(dataset(name))
    ref = reference(g)
    r32 = webrank.pagerank(g, device="gpu", engine=engine, dtype="float32", tol=1e-10)
    r64 = webrank.pagerank(g, device="gpu", engine=engine, dtype="float64", tol=1e-10)
    assert np.abs(r32.scores - ref.scores).sum() < 1e-5
    assert np.abs(r64.scores - ref.scores).sum() < 1e-9


def test_other_methods_run_on_the_new_engines(rng):
    g = random_graph(rng, 5000, 40000, weighted=True)
    ref = reference(g)
    for engine in ("blocked", "persistent"):
        for method in ("gmres", "adaptive", "fixed", "aitken"):
            r = webrank.pagerank(g, device="gpu", engine=engine, method=method, tol=1e-10)
            assert np.abs(r.scores - ref.scores).sum() < 1e-8, (engine, method)


def _kept(g):
    """The operators kept on ``g`` between calls, by key."""
    return {k: slot.op for k, slot in g._cache.items()
            if isinstance(k, tuple) and k[2:3] == ("operator",) and slot.op is not None}


def _in_threads(g, k):
    """The scores of ``k`` calls on ``g`` from as many threads at once."""
    import threading

    out = [None] * k
    barrier = threading.Barrier(k)

    def call(i):
        barrier.wait()
        out[i] = webrank.pagerank(g, device="gpu", tol=1e-12).scores

    threads = [threading.Thread(target=call, args=(i,)) for i in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(o is not None for o in out)
    return out


def test_persistent_operator_kept_between_calls(rng):
    """A warm call takes the persistent operator the call before kept on the graph: the
    same answers as a fresh operator, a call of other parameters an operator of its own,
    nothing of the graph held while kept, a call that fails does not keep it, and calls
    from several threads at once each get one (the kept one, or their own)."""
    g = random_graph(rng, 20000, 150000)
    ref = reference(g)
    first = webrank.pagerank(g, device="gpu", tol=1e-12)
    assert first.info["engine"] == "persistent"
    (key, op), = _kept(g).items()
    assert op.graph is None and op.matrix.graph is None and op._pull.matrix.graph is None
    again = webrank.pagerank(g, device="gpu", tol=1e-12)
    assert _kept(g)[key] is op and again.iterations == first.iterations
    # the uniform start it keeps is read, never written (max_iter=0 returns it, scaled)
    zero = webrank.pagerank(g, device="gpu", max_iter=0, raise_on_nonconvergence=False)
    np.testing.assert_allclose(zero.scores, np.full(g.n, 1.0 / g.n), rtol=1e-12)
    np.testing.assert_array_equal(op._start.get(), np.full(g.n, 1.0 / g.n))
    for r in (first, again):
        assert np.abs(r.scores - ref.scores).sum() < 1e-10
    # other parameters: an operator of their own, the same answers as the CPU's
    for kw in ({"alpha": 0.9}, {"dtype": "float32"}, {"criterion": "linf"},
               {"engine_options": {"launch_steps": 5}}):
        r = webrank.pagerank(g, device="gpu", tol=1e-11, **kw)
        cpu = webrank.pagerank(g, device="cpu", tol=1e-13,
                               **{k: v for k, v in kw.items() if k != "engine_options"})
        assert np.abs(r.scores - cpu.scores).sum() < (1e-6 if "dtype" in kw else 1e-10), kw
    assert len(_kept(g)) == 4  # (the criterion is not the operator's)
    # personalized calls and other methods build their own each time
    webrank.pagerank(g, device="gpu", personalization=rng.random(g.n))
    webrank.pagerank(g, device="gpu", method="gmres", tol=1e-9)
    assert len(_kept(g)) == 4
    # a call that fails does not keep its operator; the next builds a fresh one

    class Stop(Exception):
        pass

    def stop(k, res):
        raise Stop

    with pytest.raises(Stop):
        webrank.pagerank(g, device="gpu", tol=1e-12, callback=stop)
    assert key not in _kept(g)
    r = webrank.pagerank(g, device="gpu", tol=1e-12)
    assert np.abs(r.scores - ref.scores).sum() < 1e-10 and key in _kept(g)
    # threads at once: each gets an operator (the kept one, or its own), all right
    for scores in _in_threads(g, 4):
        assert np.abs(scores - ref.scores).sum() < 1e-10


def test_kept_operator_does_not_hold_its_graph(rng):
    """The operator kept on a graph has no reference back to it: dropping the graph
    frees it, and its device memory, at once (no garbage collection needed)."""
    import gc
    import weakref

    g = random_graph(rng, 5000, 40000)
    for _ in range(2):
        webrank.pagerank(g, device="gpu", tol=1e-10)
    assert _kept(g)
    gc.disable()
    try:
        alive = weakref.ref(g)
        del g
        assert alive() is None
    finally:
        gc.enable()


def test_auto_engine_and_option_errors(rng):
    g = random_graph(rng, 2000, 10000)
    r = webrank.pagerank(g, device="gpu")
    assert r.info["engine"] == "persistent" and r.info["engine_reason"]
    # options narrow the choice to the engines that take them
    picked = webrank.pagerank(g, device="gpu", engine_options={"reorder": None})
    assert picked.info["engine"] == "persistent"
    picked = webrank.pagerank(g, device="gpu", engine_options={"part_rows": 500})
    assert picked.info["engine"] == "blocked"
    with pytest.raises(ValueError, match="do not apply to engine 'pull'"):
        webrank.pagerank(g, device="gpu", engine="pull", engine_options={"launch_steps": 4})
    with pytest.raises(ValueError, match="engine must be one of"):
        webrank.pagerank(g, device="gpu", engine="bogus")
    with pytest.raises(ValueError, match="do not apply to engine 'blocked'"):
        webrank.pagerank(g, device="gpu", engine="blocked",
                         engine_options={"reorder": "out-degree"})
    with pytest.raises(ValueError, match="do not apply to engine 'pull'"):
        webrank.pagerank(g, device="gpu", engine="pull", engine_options={"part_rows": 128})
    with pytest.raises(ValueError, match="part_rows"):
        webrank.pagerank(g, device="gpu", engine="blocked", engine_options={"part_rows": 10**6})


def test_graph_built_on_the_device_runs_every_engine():
    import cupy as cp

    from webrank.backends.gpu_build import graph_on_device
    from webrank.generate import rmat

    src, dst, n = rmat(14, 16, seed=3, xp=cp, dtype=np.int32)
    g = graph_on_device(src, dst, n)
    ref = reference(g.to_host())
    for engine in ENGINES:
        r = webrank.pagerank(g, device="gpu", engine=engine, tol=1e-11)
        assert np.abs(r.scores - ref.scores).sum() < 1e-9


def test_link_locality_and_web_crawl_on_the_device(rng):
    """link_locality reads a device graph's links as a host graph's; web_crawl draws its
    law on the GPU too (another stream: the same shares, not the same links)."""
    import cupy as cp

    from webrank.backends.gpu_build import graph_on_device
    from webrank.backends.gpu_engines import link_locality
    from webrank.generate import web_crawl

    g = random_graph(rng, 5000, 60000)
    assert link_locality(g.to_device(), window=64) == link_locality(g, window=64)
    src, dst, n = web_crawl(16, 8, seed=2, xp=cp)
    assert isinstance(src, cp.ndarray) and int(src.max()) < n and int(dst.max()) < n
    web = graph_on_device(src.astype(np.int32), dst.astype(np.int32), n)
    host = web.to_host()
    assert link_locality(web) > 0.85
    assert float((host.out_degree == 0).mean()) > 0.15  # the 20% frontier, and more


@pytest.mark.parametrize("engine", ENGINES)
def test_scores_land_in_prepared_host_memory(rng, monkeypatch, engine):
    """Scores copied down into the landing array made during the solve (every size lands
    with LANDING_MIN_BYTES at 0) equal the plain copy's (to the last bits that the
    engines' atomic sums leave free), each array is the caller's own, and a second call
    on the same graph (its blocked plan cached) gives the same answer."""
    from webrank.backends import gpu_arrays

    g = random_graph(rng, 30000, 200000, False)
    plain = webrank.pagerank(g, device="gpu", engine=engine, tol=1e-10)
    landings = []
    receive = gpu_arrays.HostLanding.receive
    monkeypatch.setattr(gpu_arrays.HostLanding, "receive",
                        lambda self, x: landings.append(x.size) or receive(self, x))
    monkeypatch.setattr(gpu_arrays, "LANDING_MIN_BYTES", 0)
    landed = webrank.pagerank(g, device="gpu", engine=engine, tol=1e-10)
    again = webrank.pagerank(g, device="gpu", engine=engine, tol=1e-10)
    assert landings == [g.n, g.n]  # both calls' scores came down into a landing
    np.testing.assert_allclose(landed.scores, plain.scores, rtol=1e-12, atol=0)
    np.testing.assert_allclose(again.scores, plain.scores, rtol=1e-12, atol=0)
    landed.scores[:] = 0.0  # writable, and not shared with the next call's array
    assert again.scores.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(plain.scores, reference(g).scores, atol=1e-6)


def test_repeated_calls_land_in_kept_page_locked_arrays(rng, monkeypatch):
    """From a vector size's second call on, scores come down into page-locked arrays
    kept by the pool, one per live result, reused once a result goes; the scores equal
    the first (pageable) call's."""
    import gc

    import cupy as cp

    from webrank.backends import gpu_arrays
    from webrank.kernels.cuda_staging import PinnedResults

    pool = PinnedResults(1 << 30)
    monkeypatch.setattr(gpu_arrays, "PINNED_RESULTS", pool)
    g = random_graph(rng, 20000, 150000, False)  # 160 KB of scores
    runs = [webrank.pagerank(g, device="gpu", tol=1e-10) for _ in range(4)]
    assert pool.held == 3 * 8 * g.n  # calls 2-4, each result alive

    def locked(a):
        attrs = cp.cuda.runtime.pointerGetAttributes(a.ctypes.data)
        return attrs.type == 1  # cudaMemoryTypeHost (0: not registered with CUDA)

    assert [locked(r.scores) for r in runs] == [False, True, True, True]
    for r in runs[1:]:
        np.testing.assert_allclose(r.scores, runs[0].scores, rtol=1e-12, atol=0)
    del runs, r
    gc.collect()
    again = webrank.pagerank(g, device="gpu", tol=1e-10)
    assert locked(again.scores) and pool.held == 3 * 8 * g.n  # a kept block, reused
    assert pool.release() == 2 * 8 * g.n


def test_host_landing_receive_and_discard():
    import cupy as cp

    from webrank.backends.gpu_arrays import HostLanding

    x = cp.arange(1 << 20, dtype=np.float64)
    landing = HostLanding(x.size)
    assert landing.fits(x) and not landing.fits(x[:-1]) and not landing.fits(
        x.astype(np.float32))
    host = landing.receive(x)
    np.testing.assert_array_equal(host, x.get())
    assert not landing.fits(x)  # used once
    with pytest.raises(ValueError):
        landing.receive(x)
    given_up = HostLanding(x.size)
    given_up.discard()
    assert not given_up.fits(x)


@pytest.mark.parametrize("n", [1, 1000, (1 << 14) + 3, 5 << 14])
def test_staged_copy_down_slices_and_tail(monkeypatch, n):
    """A vector longer than the staging slices comes down slice by slice through the two
    page-locked buffers, bit for bit (a short last slice included); while another
    thread holds a device's buffers, a landing copies the plain way."""
    import cupy as cp

    from webrank.backends import gpu_arrays
    from webrank.kernels import cuda_staging

    monkeypatch.setattr(cuda_staging, "STAGING_SLICE_BYTES", 1 << 15)  # 4096 float64 a slice
    monkeypatch.setattr(cuda_staging.Staging, "_by_device", {})  # buffers of this slice size
    x = cp.random.default_rng(n).standard_normal(n)
    landing = gpu_arrays.HostLanding(n)
    np.testing.assert_array_equal(landing.receive(x), x.get())
    held = cuda_staging.Staging.take(x.device.id)
    assert held is not None and cuda_staging.Staging.take(x.device.id) is None
    try:
        np.testing.assert_array_equal(gpu_arrays.HostLanding(n).receive(x), x.get())
    finally:
        held.give_back()


@pytest.mark.parametrize("nbytes", [(1 << 16), (1 << 16) + 12, 7 << 15])
@pytest.mark.parametrize("threads", [None, 1, 3])
def test_staged_upload_slices_and_tail(monkeypatch, nbytes, threads):
    """An array of two staging slices or more goes up slice by slice through the two
    buffers (any dtype, a short last slice, any host thread count), bit for bit; with
    the buffers held elsewhere it goes up the plain way."""
    import cupy as cp

    from webrank.backends import gpu_arrays
    from webrank.kernels import cuda_staging

    monkeypatch.setattr(cuda_staging, "STAGING_SLICE_BYTES", 1 << 15)
    monkeypatch.setattr(cuda_staging.Staging, "_by_device", {})
    rng = np.random.default_rng(nbytes)
    for host in (rng.integers(0, 2**31 - 1, nbytes // 4, dtype=np.int32),
                 rng.standard_normal(nbytes // 8)):
        np.testing.assert_array_equal(gpu_arrays.upload(host, threads).get(), host)
    held = cuda_staging.Staging.take(cp.cuda.Device().id)
    try:
        np.testing.assert_array_equal(gpu_arrays.upload(host).get(), host)
    finally:
        held.give_back()
