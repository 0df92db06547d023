"""Web-scale graph generators that run on either device: R-MAT (the Graph500 Kronecker
generator; :func:`rmat`, a GPU's share of it :func:`rmat_share`) and web-like graphs in
crawl order (:func:`web_crawl`: power-law degrees and link locality). Each takes
``xp`` (NumPy, or CuPy to draw on the current GPU) and is reached through
:func:`webrank.generate.generate` by name (``"rmat"``, ``"web"``).

References
----------
Chakrabarti, Zhan & Faloutsos 2004 (R-MAT); Boldi & Vigna 2004 and Broder et al. 2000
(web_crawl) — titles in docs/references.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["GRAPH500_A", "GRAPH500_B", "GRAPH500_C", "RMAT_CHUNK", "rmat",
           "rmat_permutation", "rmat_share", "web_crawl"]

#: Graph500 initiator probabilities (``d = 1 - a - b - c = 0.05``).
GRAPH500_A = 0.57
GRAPH500_B = 0.19
GRAPH500_C = 0.19

#: Default number of edges generated per chunk by :func:`rmat`.
RMAT_CHUNK = 1 << 24


# ---------------------------------------------------------------------------
# R-MAT / Graph500 Kronecker
# ---------------------------------------------------------------------------


def _get_xp(xp: Any) -> Any:
    if xp is None:
        return np
    if isinstance(xp, str):
        if xp in ("numpy", "np", "cpu"):
            return np
        if xp in ("cupy", "cp", "gpu", "cuda"):
            import cupy  # optional dependency, imported lazily

            return cupy
        raise ValueError(f"unknown array module {xp!r}")
    return xp


def _xp_rng(xp: Any, seed: Any) -> Any:
    """A seeded generator for array module ``xp`` (numpy or cupy)."""
    if xp is np:
        return np.random.default_rng(seed)
    if isinstance(seed, np.random.Generator):
        seed = int(seed.integers(0, 2**63 - 1))
    elif isinstance(seed, np.integer):
        seed = int(seed)
    default_rng = getattr(xp.random, "default_rng", None)
    if default_rng is not None:
        return default_rng(seed)
    return xp.random.RandomState(seed)


def _uniform32(rng: Any, out: Any) -> Any:
    """Fill ``out`` (float32) with uniforms in [0, 1); return the filled array.

    Works with NumPy and CuPy Generators (``random(size, dtype, out=)``) and
    with ``cupy.random.RandomState`` (``random_sample``, which allocates).
    """
    if hasattr(rng, "random_sample"):  # legacy RandomState API
        return rng.random_sample(size=out.shape, dtype=np.float32)
    return rng.random(out.shape, dtype=np.float32, out=out)


def _permutation(xp: Any, rng: Any, n: int) -> Any:
    """A uniformly random permutation of ``range(n)`` as an int64 array."""
    perm = getattr(rng, "permutation", None)
    if perm is not None:
        return perm(n)
    # cupy.random.Generator has no permutation: argsort random 62-bit keys
    keys = rng.integers(0, 1 << 62, size=n, dtype=np.int64)
    return xp.argsort(keys)


def rmat(
    scale: int,
    edge_factor: int = 16,
    *,
    a: float = GRAPH500_A,
    b: float = GRAPH500_B,
    c: float = GRAPH500_C,
    seed: Any = None,
    xp: Any = None,
    shuffle: bool = True,
    dtype: Any = np.int64,
    chunk_size: int = RMAT_CHUNK,
) -> tuple[Any, Any, int]:
    r"""R-MAT / Graph500 Kronecker random graph, on the CPU or the GPU.

    ``n = 2**scale`` nodes and ``m = edge_factor * n`` directed edges, drawn
    independently.  Each edge picks one quadrant of the adjacency matrix per
    level, ``scale`` times: top-left with probability ``a``, top-right ``b``,
    bottom-left ``c`` and bottom-right ``d = 1 - a - b - c``; level ``l``
    (``l = 0`` first) sets bit ``scale - 1 - l`` of the source (row) and of
    the destination (column).  Self loops and parallel edges are kept, as in
    the Graph500 generator.  With ``shuffle=True`` vertex ids are relabelled
    by a uniformly random permutation (as the Graph500 specification
    requires) so that ids carry no locality or degree information.

    Vectorised level by level: one float32 uniform ``r`` per edge per level
    decides both bits (quadrants laid out on ``[0, 1)`` as ``a | b | d | c``:
    source bit ``r >= a+b``, destination bit ``(r >= a) xor (r >= a+b+d)``),
    for a whole chunk of edges at once.  Chunks of ``chunk_size`` edges bound
    the temporaries (one float32 and three boolean buffers of ``chunk_size``,
    reused across levels and chunks, plus two int32 accumulators when
    ``dtype`` is int64) independently of ``m``.  Only array operations
    common to NumPy and CuPy are used, so the same code runs on the GPU with
    ``xp=cupy``.

    The permutation is drawn *after* all edges, so for the same seed the
    shuffled graph is exactly the unshuffled graph with its vertices
    relabelled (same degree multisets).  The arrays depend on ``chunk_size``.

    Parameters
    ----------
    scale : int
        Base-2 logarithm of the number of nodes.
    edge_factor : int, optional
        Edges per node.  Default 16 (Graph500).
    a, b, c : float, optional
        Quadrant probabilities; ``d = 1 - a - b - c`` must be >= 0.
        Defaults are Graph500's 0.57, 0.19, 0.19 (``d = 0.05``).
    seed : None, int or numpy.random.Generator, optional
        With NumPy, passed to :func:`numpy.random.default_rng`; with CuPy,
        passed to ``cupy.random.default_rng`` (or ``cupy.random.RandomState``
        where that is missing); a NumPy Generator is turned into an int seed.
        Default ``None``.
    xp : module or str, optional
        Array module: ``numpy`` (default, also ``None`` or ``"numpy"``) or
        ``cupy`` (also ``"cupy"``; imported only then).
    shuffle : bool, optional
        Relabel vertices by a random permutation.  Default ``True``.
    dtype : dtype, optional
        Integer dtype of ``src``/``dst``: ``int64`` (default) or ``int32``
        (halves memory; needs ``scale <= 31``).
    chunk_size : int, optional
        Edges generated per chunk.  Default ``2**24``.

    Returns
    -------
    src, dst : xp.ndarray of ``dtype``
        Edge list of length ``edge_factor * 2**scale``.
    n : int
        Number of nodes, ``2**scale``.

    References
    ----------
    .. [1] D. Chakrabarti, Y. Zhan and C. Faloutsos, "R-MAT: A recursive
       model for graph mining", Proceedings of the 2004 SIAM International
       Conference on Data Mining (SDM), 442–446, 2004.
    .. [2] J. Leskovec, D. Chakrabarti, J. Kleinberg, C. Faloutsos and
       Z. Ghahramani, "Kronecker graphs: an approach to modeling networks",
       JMLR 11, 985–1042, 2010.
    .. [3] Graph500 Steering Committee, "Graph 500 Benchmark Specification",
       Kernel generator section, https://graph500.org/ (v2.x / v3.0).
    """
    xp = _get_xp(xp)
    dtype, n, m = _rmat_shape(scale, edge_factor, dtype)
    rng = _xp_rng(xp, seed)
    src, dst = _rmat_edges(xp, rng, int(scale), m, a, b, c, dtype, chunk_size)
    if shuffle and n > 1:
        _relabel(xp, src, dst, _permutation(xp, rng, n).astype(dtype, copy=False),
                 chunk_size)
    return src, dst, n


def rmat_share(
    scale: int,
    edge_factor: int = 16,
    *,
    share: int = 0,
    shares: int = 1,
    seed: int = 0,
    xp: Any = None,
    dtype: Any = np.int64,
    chunk_size: int = RMAT_CHUNK,
    a: float = GRAPH500_A,
    b: float = GRAPH500_B,
    c: float = GRAPH500_C,
    perm: Any = None,
) -> tuple[Any, Any, int]:
    """Share ``share`` of ``shares`` of an R-MAT graph (see :func:`rmat`), drawn
    independently of the others: what each rank or GPU of a partitioned run generates,
    so that no one holds the whole edge list.

    The shares' edges come from generators seeded by ``(seed, share)``; the vertex
    permutation (Graph500's shuffle) from one seeded by ``seed`` alone, so every share
    relabels with the same permutation and together they are one R-MAT graph of
    ``edge_factor * 2**scale`` edges (share i holds edges ``i * m // shares`` to
    ``(i + 1) * m // shares``). Not the same edges as ``rmat(scale, seed=seed)``.
    ``perm``: that permutation, from :func:`rmat_permutation`, when many shares are drawn
    in one place (it is drawn once instead of once per share).

    Returns ``(src, dst, n)`` of this share.
    """
    xp = _get_xp(xp)
    dtype, n, m = _rmat_shape(scale, edge_factor, dtype)
    if not 0 <= int(share) < int(shares):
        raise ValueError(f"share must be in 0..{shares - 1}, not {share!r}")
    lo, hi = int(share) * m // int(shares), (int(share) + 1) * m // int(shares)
    rng = _xp_rng(xp, np.random.SeedSequence([int(seed), int(share)]).generate_state(1)[0])
    src, dst = _rmat_edges(xp, rng, int(scale), hi - lo, a, b, c, dtype, chunk_size)
    if n > 1:
        if perm is None:
            perm = rmat_permutation(scale, seed=seed, xp=xp, dtype=dtype)
        _relabel(xp, src, dst, perm, chunk_size)
    return src, dst, n


def rmat_permutation(scale: int, *, seed: int = 0, xp: Any = None,
                     dtype: Any = np.int64) -> Any:
    """The vertex permutation every :func:`rmat_share` of ``seed`` applies."""
    xp = _get_xp(xp)
    return _permutation(xp, _xp_rng(xp, int(seed)), 1 << int(scale)).astype(dtype,
                                                                             copy=False)


def _rmat_shape(scale: int, edge_factor: int, dtype: Any) -> tuple[np.dtype, int, int]:
    scale, edge_factor = int(scale), int(edge_factor)
    if scale < 0:
        raise ValueError("scale must be >= 0")
    if edge_factor < 0:
        raise ValueError("edge_factor must be >= 0")
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        raise ValueError("dtype must be an integer dtype")
    if scale > 8 * dtype.itemsize - (1 if dtype.kind == "i" else 0):
        raise ValueError(f"scale {scale} does not fit node ids in {dtype}")
    n = 1 << scale
    return dtype, n, edge_factor * n


def _relabel(xp: Any, src: Any, dst: Any, perm: Any, chunk_size: int) -> None:
    """Apply the vertex permutation in place, a chunk at a time."""
    chunk_size = max(1, int(chunk_size))
    for lo in range(0, src.size, chunk_size):
        hi = min(lo + chunk_size, src.size)
        src[lo:hi] = perm[src[lo:hi]]
        dst[lo:hi] = perm[dst[lo:hi]]


def _rmat_edges(xp: Any, rng: Any, scale: int, m: int, a: float, b: float, c: float,
                dtype: np.dtype, chunk_size: int) -> tuple[Any, Any]:
    """``m`` R-MAT edges (unshuffled ids), level by level, a chunk at a time (see
    :func:`rmat`)."""
    a, b, c = float(a), float(b), float(c)
    d = 1.0 - a - b - c
    if min(a, b, c) < 0 or d < -1e-12:
        raise ValueError("need a, b, c >= 0 and a + b + c <= 1")
    chunk_size = max(1, int(chunk_size))
    src = xp.empty(m, dtype=dtype)
    dst = xp.empty(m, dtype=dtype)
    # Quadrants laid out on [0, 1) as a | b | d | c, so that
    # src bit = r >= a+b and dst bit = (r >= a) xor (r >= a+b+d).
    t_a = np.float32(a)
    t_ab = np.float32(a + b)
    t_abd = np.float32(a + b + max(d, 0.0))
    # accumulate ids in 32-bit words when they fit (fewer bytes per level)
    work = np.dtype(np.int32) if scale <= 31 else np.dtype(np.int64)
    csize = min(chunk_size, m)
    if csize:
        r_buf = xp.empty(csize, dtype=np.float32)
        s_bit = xp.empty(csize, dtype=bool)
        t_bit = xp.empty(csize, dtype=bool)
        tmp = xp.empty(csize, dtype=bool)
        if work != dtype:
            s_acc = xp.empty(csize, dtype=work)
            t_acc = xp.empty(csize, dtype=work)
    for lo in range(0, m, chunk_size):
        hi = min(lo + chunk_size, m)
        size = hi - lo
        if work == dtype:  # accumulate straight into the output
            s, t = src[lo:hi], dst[lo:hi]
        else:
            s, t = s_acc[:size], t_acc[:size]
        sb, tb, tm = s_bit[:size], t_bit[:size], tmp[:size]
        s.fill(0)
        t.fill(0)
        for _ in range(scale):
            r = _uniform32(rng, r_buf[:size])
            xp.greater_equal(r, t_ab, out=sb)
            xp.greater_equal(r, t_a, out=tb)
            xp.greater_equal(r, t_abd, out=tm)
            xp.logical_xor(tb, tm, out=tb)
            xp.left_shift(s, 1, out=s)
            xp.bitwise_or(s, sb, out=s)
            xp.left_shift(t, 1, out=t)
            xp.bitwise_or(t, tb, out=t)
        if work != dtype:
            src[lo:hi] = s
            dst[lo:hi] = t
    return src, dst


def web_crawl(
    scale: int,
    edge_factor: int = 16,
    *,
    local: float = 0.9,
    mean_offset: float = 32.0,
    out_exponent: float = 2.7,
    in_exponent: float = 2.1,
    dangling: float = 0.2,
    seed: Any = None,
    chunk_size: int = RMAT_CHUNK,
    xp: Any = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    r"""A web-like graph in crawl order: power-law degrees *and* link locality.

    ``n = 2**scale`` pages numbered in the order a crawler found them, ``m = edge_factor
    * n`` links. Real crawls (the LAW graphs) have both heavy-tailed degrees and
    locality: most links stay within a site, and a site's pages are numbered together,
    so most links point to a nearby id (Boldi & Vigna 2004, the property their WebGraph
    compression rests on); R-MAT has the degrees but, relabelled at random, no locality.
    Each link here:

    * has its source drawn with probability proportional to a per-page weight (Zipf's law
      over a random order of the pages), so out-degrees follow a power law of exponent
      ``out_exponent`` (Broder et al. 2000 measured 2.72 for the web's out-degrees, 2.1
      for in-degrees);
    * with probability ``local``, points to ``source + offset`` (wrapped around ``n``),
      the offset's size geometric with mean ``mean_offset`` and its sign random (a link
      within the site);
    * else points anywhere, to a page drawn with probability proportional to another
      such weight: in-degrees with a power-law tail of exponent ``in_exponent`` (a link
      to a popular page of another site).

    A share ``dangling`` of the pages, drawn at random, has no out-links (a crawl's
    frontier: pages found but not fetched; cnr-2000 has 24%). Self-loops and repeated
    links are kept, as in :func:`rmat` (``Graph.from_edges`` collapses repeats).
    Vectorised over chunks of ``chunk_size`` links, with NumPy or, ``xp=cupy``, on the
    GPU (another random stream: the same seed gives another graph of the same law).

    Unlike a real crawl, the near links land evenly on the pages around their source
    (a real site's links concentrate on its index pages too), so small in-degrees are
    more even than a crawl's.

    Parameters
    ----------
    scale : int
        Base-2 logarithm of the number of pages.
    edge_factor : int, default 16
        Links per page on average (R-MAT's default, for like-for-like sizes).
    local : float, default 0.9
        Share of the links that point near their source.
    mean_offset : float, default 32
        Mean distance (in ids) of a near link.
    out_exponent, in_exponent : float, default 2.7, 2.1
        Exponents of the out- and in-degree tails (> 1).
    dangling : float, default 0.2
        Share of the pages without out-links, in [0, 1).
    seed : None, int or numpy.random.Generator, optional
        Passed to :func:`numpy.random.default_rng` (with CuPy, to its generator).
    xp : module or str, optional
        ``numpy`` (default) or ``cupy``.

    Returns
    -------
    src, dst : ndarray of int64
        Edge list of length ``edge_factor * 2**scale`` (NumPy or CuPy, as ``xp``).
    n : int
        Number of pages, ``2**scale``.

    References
    ----------
    .. [1] P. Boldi and S. Vigna, "The WebGraph Framework I: Compression Techniques",
       WWW 2004 (locality of links in crawl order).
    .. [2] A. Broder, R. Kumar, F. Maghoul, P. Raghavan, S. Rajagopalan, R. Stata,
       A. Tomkins and J. Wiener, "Graph structure in the Web", WWW 2000 (degree tails).

    Examples
    --------
    >>> src, dst, n = web_crawl(10, seed=1)
    >>> n, src.size
    (1024, 16384)
    """
    scale, edge_factor = int(scale), int(edge_factor)
    if not 0 <= scale <= 40 or edge_factor < 0:
        raise ValueError("scale must be in 0..40 and edge_factor >= 0")
    if not 0.0 <= local <= 1.0:
        raise ValueError(f"local must be in [0, 1], not {local!r}")
    if not mean_offset >= 1.0:
        raise ValueError(f"mean_offset must be >= 1, not {mean_offset!r}")
    if not (out_exponent > 1.0 and in_exponent > 1.0):
        raise ValueError("out_exponent and in_exponent must be > 1")
    if not 0.0 <= dangling < 1.0:
        raise ValueError(f"dangling must be in [0, 1), not {dangling!r}")
    xp = _get_xp(xp)
    rng = _xp_rng(xp, seed)
    n, m = 1 << scale, edge_factor << scale
    p_step = 1.0 / mean_offset  # geometric on 1, 2, ... with mean mean_offset

    def permutation(k: int) -> Any:
        return rng.permutation(k) if xp is np else xp.argsort(rng.random(k))

    def geometric(k: int) -> Any:
        if xp is np:
            return rng.geometric(p_step, k)
        # inversion (CuPy's generator has no geometric draw)
        steps = xp.floor(xp.log1p(-rng.random(k)) / np.log1p(-p_step)) if p_step < 1 \
            else xp.zeros(k)
        return steps.astype(xp.int64) + 1

    # per-page weights by Zipf's law over a random order of the pages: the k-th heaviest
    # weighs k^(-1 / (exponent - 1)), so the degrees (weight times links) have a power-law
    # tail of that exponent, with the extremes of the law rather than of a sample
    def zipf_weights(exponent: float) -> Any:
        weight = xp.arange(1, n + 1, dtype=xp.float64) ** (-1.0 / (exponent - 1.0))
        return weight[permutation(n)]

    out_weight = zipf_weights(out_exponent)
    out_weight[rng.random(n) < dangling] = 0.0  # the frontier: no out-links
    if n and not bool(out_weight.any()):
        out_weight[0] = 1.0
    out_cdf, in_cdf = xp.cumsum(out_weight), xp.cumsum(zipf_weights(in_exponent))
    src = xp.empty(m, dtype=xp.int64)
    dst = xp.empty(m, dtype=xp.int64)
    for start in range(0, m, chunk_size):
        k = min(chunk_size, m - start)
        s = xp.searchsorted(out_cdf, rng.random(k) * out_cdf[-1], side="right")
        near = rng.random(k) < local
        offset = geometric(k) * xp.where(rng.random(k) < 0.5, -1, 1)
        far = xp.searchsorted(in_cdf, rng.random(k) * in_cdf[-1], side="right")
        xp.minimum(s, n - 1, out=s)
        src[start:start + k] = s
        dst[start:start + k] = xp.where(near, (s + offset) % n, xp.minimum(far, n - 1))
    return src, dst, n
