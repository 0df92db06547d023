"""webrank.compare: seed 003's correctness measures."""

import numpy as np
import pytest

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
