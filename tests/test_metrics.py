"""webrank.compare: Sgherzi's correctness measures, exact and near ties included."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import webrank


def test_identical_rankings():
    s = np.array([0.1, 0.4, 0.2, 0.3])
    c = webrank.compare(s, s, k=2)
    assert c.l1 == 0 and c.wrong_position_pct == 0 and c.kendall_tau == pytest.approx(1.0)
    assert c.top_k_overlap == 1.0


def test_swapped_pair_and_displacement():
    ref = np.array([0.4, 0.3, 0.2, 0.1])
    a = np.array([0.3, 0.4, 0.2, 0.1])  # nodes 0 and 1 swap places
    c = webrank.compare(a, ref, k=1)
    assert c.wrong_position_pct == pytest.approx(50.0)
    assert c.l1 == pytest.approx(0.2) and c.linf == pytest.approx(0.1)
    assert c.displacement_mean == pytest.approx(0.05)
    assert c.displacement_var == pytest.approx(np.var([0.1, 0.1, 0, 0]))
    assert c.top_k_overlap == 0.0
    assert c.kendall_tau < 1


def test_length_mismatch():
    with pytest.raises(ValueError, match="differ"):
        webrank.compare([1, 2], [1, 2, 3])


# ------------------------------------------------------------ ties with a tolerance
def wrong_positions_loop(a: np.ndarray, b: np.ndarray, tie_tol: float) -> float:
    """The tie-aware measure written plainly (a loop over nodes), for small vectors."""
    n = a.size
    order_b = sorted(range(n), key=lambda i: (-b[i], i))
    order_a = sorted(range(n), key=lambda i: (-a[i], i))
    pos_a = {node: p for p, node in enumerate(order_a)}
    groups: list[list[int]] = []
    for p, node in enumerate(order_b):
        prev = b[order_b[p - 1]] if p else None
        if p and prev - b[node] <= tie_tol * max(abs(prev), abs(b[node])):
            groups[-1].append(p)
        else:
            groups.append([p])
    wrong = 0
    for positions in groups:
        lo, hi = positions[0], positions[-1]
        wrong += sum(not lo <= pos_a[order_b[p]] <= hi for p in positions)
    return 100.0 * wrong / n


def test_exact_ties_in_another_order_are_not_wrong():
    ref = np.array([0.3, 0.2, 0.2, 0.2, 0.1])  # nodes 1, 2, 3 tie exactly
    a = np.array([0.3, 0.2, 0.2 + 1e-15, 0.2 + 2e-15, 0.1])  # a orders them 3, 2, 1
    c = webrank.compare(a, ref)
    assert c.wrong_position_pct == 0.0
    assert c.wrong_position_strict_pct == pytest.approx(40.0)  # nodes 1 and 3 swapped
    assert webrank.compare(a, ref, tie_tol=0).wrong_position_pct == 0.0


def test_real_misorderings_still_count():
    ref = np.array([0.3, 0.2, 0.2, 0.2, 0.1])
    a = np.array([0.19, 0.2, 0.2, 0.3, 0.1])  # 0 drops below the tie group, 3 leads
    c = webrank.compare(a, ref)
    assert c.wrong_position_pct == pytest.approx(40.0)  # nodes 0 and 3, not 1 and 2
    # 4 jumps to the top: 0 and the last of the tie group are pushed out of their
    # positions; the tie group's reversed order is no fault
    a = np.array([0.3, 0.2, 0.2 + 1e-15, 0.2 + 2e-15, 0.35])
    c = webrank.compare(a, ref)
    assert c.wrong_position_pct == pytest.approx(60.0)  # nodes 4, 0 and 1
    assert c.wrong_position_strict_pct == pytest.approx(100.0)
    b = np.array([0.3, 0.2, 0.2, 0.2, 0.25])  # 4 climbs into the tie group's positions
    assert webrank.compare(b, ref).wrong_position_pct == pytest.approx(40.0)  # 4, and 3


def test_tie_tolerance_is_relative_and_chains():
    ref = np.array([1.0, 1.0 - 5e-13, 1.0 - 1e-12, 0.5, 0.5 * (1 - 5e-13)])
    rev = ref[::-1].copy()  # the reverse order within each near-tie group...
    a = np.array([rev[2], rev[3], rev[4], rev[0], rev[1]])
    c = webrank.compare(a, ref)  # ...1e-12 relative: one chained group, one pair
    assert c.wrong_position_pct == 0.0 and c.tie_tol == 1e-12
    assert c.wrong_position_strict_pct == pytest.approx(80.0)
    assert webrank.compare(a, ref, tie_tol=0).wrong_position_pct == pytest.approx(80.0)
    assert webrank.compare(a, ref, tie_tol=1e-3).wrong_position_pct == 0.0
    assert webrank.compare(a, ref, tie_tol=0.9).wrong_position_pct == 0.0  # all one group


def test_bad_tie_tol():
    for bad in (-1e-9, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="tie_tol"):
            webrank.compare([1.0, 2.0], [1.0, 2.0], tie_tol=bad)


scores = st.lists(st.sampled_from([0.1, 0.2, 0.2 + 1e-14, 0.3, 0.05, 0.0]), min_size=1,
                  max_size=60)


@settings(max_examples=200, deadline=None)
@given(ref=scores, seed=st.integers(0, 2**32 - 1),
       tie_tol=st.sampled_from([0.0, 1e-12, 1e-3]))
def test_matches_the_plain_definition(ref, seed, tie_tol):
    b = np.array(ref)
    rng = np.random.default_rng(seed)
    a = b + rng.normal(scale=0.02, size=b.size) * rng.integers(0, 2, size=b.size)
    c = webrank.compare(a, b, tie_tol=tie_tol)
    assert c.wrong_position_pct == pytest.approx(wrong_positions_loop(a, b, tie_tol))
    assert c.wrong_position_pct <= c.wrong_position_strict_pct


@settings(max_examples=100, deadline=None)
@given(ref=scores, seed=st.integers(0, 2**32 - 1))
def test_any_order_of_tied_nodes_is_right(ref, seed):
    # scores_a = the reference with its exact ties split at random (as Gauss–Seidel's
    # in-place sweeps split them): the ranks are right, only the strict count objects
    b = np.array(ref)
    a = b + np.random.default_rng(seed).permutation(b.size) * 1e-18
    c = webrank.compare(a, b, tie_tol=0)
    assert c.wrong_position_pct == 0.0
    assert c.wrong_position_strict_pct == pytest.approx(
        100.0 * np.count_nonzero(np.lexsort((np.arange(b.size), -a))
                                 != np.lexsort((np.arange(b.size), -b))) / b.size)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=50, unique=True),
       st.randoms(use_true_random=False))
def test_without_ties_equals_the_strict_measure(values, rnd):
    b = np.array(values)
    a = b.copy()
    rnd.shuffle(a)
    c = webrank.compare(a, b, tie_tol=0)
    assert c.wrong_position_pct == c.wrong_position_strict_pct


def test_cli_compare_prints_both_measures(tmp_path):
    import json

    from click.testing import CliRunner

    from webrank.cli import cli

    np.save(tmp_path / "ref.npy", np.array([0.3, 0.2, 0.2, 0.2, 0.1]))
    np.save(tmp_path / "a.npy", np.array([0.3, 0.2, 0.2 + 1e-15, 0.2 + 2e-15, 0.1]))
    args = ["compare", str(tmp_path / "a.npy"), str(tmp_path / "ref.npy"), "--json"]
    doc = json.loads(CliRunner().invoke(cli, args).output)
    assert doc["wrong_position_pct"] == 0.0 and doc["wrong_position_strict_pct"] == 40.0
    assert doc["tie_tol"] == 1e-12
    doc = json.loads(CliRunner().invoke(cli, [*args, "--tie-tol", "0.5"]).output)
    assert doc["tie_tol"] == 0.5
    out = CliRunner().invoke(cli, args[:-1]).output
    assert "wrong position strict pct" in out and "tie tol" in out
    bad = CliRunner().invoke(cli, [*args, "--tie-tol", "-1"])
    assert bad.exit_code == 2


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 60), levels=st.sampled_from([1, 2, 3, 7, 10**6]), data=st.data())
def test_kendall_tau_is_scipys(n, levels, data):
    """Kendall's tau-b without SciPy (a compiled merge sort of the discordant pairs)
    against scipy.stats.kendalltau, ties in either vector, both or neither."""
    from scipy.stats import kendalltau

    from webrank.orders import kendall_tau

    a = np.array(data.draw(st.lists(st.integers(0, levels), min_size=n, max_size=n)), float)
    b = np.array(data.draw(st.lists(st.integers(0, levels), min_size=n, max_size=n)), float)
    got = kendall_tau(a, b)
    want = kendalltau(a, b).statistic if n > 1 else np.nan
    if np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(want, abs=1e-12)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=40), st.integers(1, 5000),
       st.integers(0, 2**32 - 1), st.integers(0, 40), st.sampled_from([0, 1 << 16]))
def test_best_indices_are_a_sort_of_all_by_score_then_index(levels, n, seed, k,
                                                           candidates_min):
    """The k best entries, ties by index, as a full sort gives them: few distinct values
    (plateaus at the k-th value, shared by most entries), every k, and the candidates'
    narrowing by chunk maxima taken (``CANDIDATES_MIN`` 0) or not."""
    from webrank import orders

    scores = np.random.default_rng(seed).permutation(np.resize(levels, n)) / 7
    want = np.lexsort((np.arange(scores.size), -scores))[:k]
    saved = orders.CANDIDATES_MIN
    orders.CANDIDATES_MIN = candidates_min
    try:
        got = orders.best_indices(scores, k)
    finally:
        orders.CANDIDATES_MIN = saved
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_compare_refuses_scores_that_are_not_finite(bad):
    ref = np.array([0.5, 0.3, 0.2])
    other = ref.copy()
    other[1] = bad
    with pytest.raises(ValueError, match=r"scores_a\[1\] is .*must be finite"):
        webrank.compare(other, ref)
    with pytest.raises(ValueError, match=r"scores_b\[1\]"):
        webrank.compare(ref, other)
