// Row sums shared by the CPU kernels that gather along in-link CSR rows (power, adaptive,
// Gauss-Seidel, frontier steps): the same order of adds everywhere, so that two kernels
// summing the same row give the same bits.
#pragma once

#include <cstdint>

namespace webrank {

// sum over k in [k, end) of vals[k] * xs[indices[k]] in float64, in two interleaved sums
// (even and odd links): one chain of dependent adds per row would make the add's latency,
// not memory, the pull step's bound.
template <class I, class V, class X>
inline double range_sum(const I* indices, V vals, const X* xs, int64_t k, int64_t end) {
    double a0 = 0.0, a1 = 0.0;
    for (; k + 1 < end; k += 2) {
        a0 += static_cast<double>(vals[k]) * static_cast<double>(xs[indices[k]]);
        a1 += static_cast<double>(vals[k + 1]) * static_cast<double>(xs[indices[k + 1]]);
    }
    if (k < end) a0 += static_cast<double>(vals[k]) * static_cast<double>(xs[indices[k]]);
    return a0 + a1;
}

inline double add_residual(double res, double diff, int crit) {
    if (crit == 0) return res + diff;
    if (crit == 1) return res + diff * diff;
    return diff > res ? diff : res;
}

// range_sum of row i of a CSR.
template <class P, class I, class V, class X>
inline double row_sum(const P* indptr, const I* indices, V vals, const X* xs, int64_t i) {
    return range_sum(indices, vals, xs, indptr[i], indptr[i + 1]);
}

}  // namespace webrank
