// The frontier steps of incremental PageRank: Jacobi steps over a list of active rows, and
// the next active list (the out-neighbours of the rows that propagated). Python side:
// webrank.kernels.cpu_frontier (the math is in its docstring).
#include "common.hpp"
#include "rows.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

namespace webrank {
namespace {

// flag[j] = 1 from several threads at once: every writer stores the same value, so a
// relaxed atomic store (a plain byte store on x86 and Arm) is all the race needs.
inline void set_flag(uint8_t* flag, int64_t j) {
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(flag + j, static_cast<uint8_t>(1), __ATOMIC_RELAXED);
#else
    flag[j] = 1;
#endif
}

// Pass 1 of a step: new values of the active rows from the previous iterate (Jacobi: no
// row reads another's update).
template <class P, class I, class V>
void step_values(const P* ip, const I* ix, V vv, const double* ys, const double* b,
                 bool uniform_b, double alpha, const int64_t* active, int64_t na,
                 double* new_vals, int nt) {
    auto row = [&](int64_t t) {
        const int64_t i = active[t];
        new_vals[t] = alpha * row_sum(ip, ix, vv, ys, i) + (uniform_b ? b[0] : b[i]);
    };
    if (nt <= 1) {  // no parallel region: small frontiers are latency bound
        for (int64_t t = 0; t < na; ++t) row(t);
        return;
    }
#pragma omp parallel for schedule(dynamic, 256) num_threads(nt)
    for (int64_t t = 0; t < na; ++t) row(t);
}

// Pass 2: commit the new values, account for the change, flag the out-neighbours of the
// rows that propagate; returns (L1 change, change of sum(acc), out-links of the
// propagating rows). With nt > 1 the rows run in parallel but the two float sums are
// still taken in row order afterwards: the same bits as one thread, at any count.
template <class IO, class OP, class OI>
std::tuple<double, double, int64_t> step_commit(
    const IO* inv_out, double* y, double* ys, const int64_t* active, int64_t na, double* acc,
    double tau, const double* new_vals, bool* propagate, const OP* op, const OI* oi,
    uint8_t* flag, int nt) {
    auto commit = [&](int64_t t, double& diff, double& kept) -> int64_t {
        const int64_t i = active[t];
        const double yi = new_vals[t];
        diff = std::fabs(yi - y[i]);
        y[i] = yi;
        ys[i] = yi * static_cast<double>(inv_out[i]);
        const double before = acc[i];
        const double after = before + diff;
        if (after > tau) {
            propagate[t] = true;
            acc[i] = 0.0;
            kept = -before;
            for (int64_t k = op[i]; k < op[i + 1]; ++k) set_flag(flag, oi[k]);
            return static_cast<int64_t>(op[i + 1] - op[i]);
        }
        propagate[t] = false;
        acc[i] = after;
        kept = diff;
        return 0;
    };
    double change = 0.0;  // L1 norm of this step's change
    double held = 0.0;    // change of sum(acc)
    int64_t edges = 0;
    if (nt <= 1) {
        for (int64_t t = 0; t < na; ++t) {
            double diff, kept;
            edges += commit(t, diff, kept);
            change += diff;
            held += kept;
        }
        return {change, held, edges};
    }
    std::vector<double> terms(2 * static_cast<size_t>(na));
#pragma omp parallel for schedule(dynamic, 256) num_threads(nt) reduction(+ : edges)
    for (int64_t t = 0; t < na; ++t) edges += commit(t, terms[2 * t], terms[2 * t + 1]);
    for (int64_t t = 0; t < na; ++t) {
        change += terms[2 * t];
        held += terms[2 * t + 1];
    }
    return {change, held, edges};
}

std::tuple<double, double, int64_t> frontier_step(
    const In& indptr, const In& indices, const In& vals, const In& inv_out,
    const Out& y, const Out& ys, const In& b, double alpha, const In& active,
    const Out& acc, double tau, const Out& new_vals, const Out& propagate,
    const In& out_indptr, const In& out_indices, const Out& flag, int threads) {
    double* yp = data_as<double>(y, "y");
    double* ysp = data_as<double>(ys, "ys");
    const double* bp = data_as<const double>(b, "b");
    const int64_t* ap = data_as<const int64_t>(active, "active");
    double* accp = data_as<double>(acc, "acc");
    double* nv = data_as<double>(new_vals, "new_vals");
    bool* prop = data_as<bool>(propagate, "propagate");
    uint8_t* fl = data_as<uint8_t>(flag, "flag");
    const int64_t na = static_cast<int64_t>(active.size());
    if (new_vals.size() < active.size() || propagate.size() < active.size())
        bad_array("new_vals", "new_vals and propagate must hold one entry per active row");
    const int nt = threads_or_default(threads);
    const bool uniform_b = b.size() == 1;
    with_index(indptr, "indptr", [&](auto* ip) {
        with_index(indices, "indices", [&](auto* ix) {
            with_vals(vals, "vals", [&](auto vv) {
                nb::gil_scoped_release unlocked;
                step_values(ip, ix, vv, ysp, bp, uniform_b, alpha, ap, na, nv, nt);
            });
        });
    });
    return with_float(inv_out, "inv_out", [&](auto* io) {
        return with_index(out_indptr, "out_indptr", [&](auto* op) {
            return with_index(out_indices, "out_indices", [&](auto* oi) {
                nb::gil_scoped_release unlocked;
                return step_commit(io, yp, ysp, ap, na, accp, tau, nv, prop, op, oi, fl, nt);
            });
        });
    });
}

// The distinct out-neighbours of the rows t with propagate[t], sorted, into out (which
// holds at least their out-degree sum); returns their count. `marked`: their flags are
// already 1 (set by a step) and are cleared here; else they are 0 and stay 0.
int64_t frontier_collect(const In& out_indptr, const In& out_indices, const In& rows,
                         const In& propagate, const Out& flag, bool marked,
                         const Out& out) {
    const bool* prop = data_as<const bool>(propagate, "propagate");
    uint8_t* fl = data_as<uint8_t>(flag, "flag");
    int64_t* o = data_as<int64_t>(out, "out");
    const int64_t nr = static_cast<int64_t>(rows.size());
    if (propagate.size() < rows.size()) bad_array("propagate", "must hold one entry per row");
    const int64_t cap = static_cast<int64_t>(out.size());
    return with_index(out_indptr, "out_indptr", [&](auto* op) {
        return with_index(out_indices, "out_indices", [&](auto* oi) {
            return with_index(rows, "rows", [&](auto* rp) {
                nb::gil_scoped_release unlocked;
                const uint8_t want = marked ? 1 : 0;
                int64_t count = 0;
                for (int64_t t = 0; t < nr; ++t) {
                    if (!prop[t]) continue;
                    const int64_t i = rp[t];
                    for (int64_t k = op[i]; k < op[i + 1]; ++k) {
                        const int64_t j = oi[k];
                        if (fl[j] == want) {
                            if (count == cap) {  // undersized out: restore the flags first
                                for (int64_t s = 0; s < count; ++s) fl[o[s]] = want;
                                throw std::length_error("frontier_collect: out is too small");
                            }
                            fl[j] = 1 - want;
                            o[count++] = j;
                        }
                    }
                }
                std::sort(o, o + count);
                if (!marked)
                    for (int64_t t = 0; t < count; ++t) fl[o[t]] = 0;
                return count;
            });
        });
    });
}

}  // namespace

void register_frontier(nb::module_& m) {
    using namespace nb::literals;
    m.def("frontier_step", &frontier_step, "indptr"_a, "indices"_a, "vals"_a, "inv_out"_a,
          "y"_a, "ys"_a, "b"_a, "alpha"_a, "active"_a, "acc"_a, "tau"_a, "new_vals"_a,
          "propagate"_a, "out_indptr"_a, "out_indices"_a, "flag"_a, "threads"_a = 0,
          "One Jacobi step over the rows `active`, in place; returns (change, held, edges) "
          "and flags the out-neighbours of the rows that propagated.");
    m.def("frontier_collect", &frontier_collect, "out_indptr"_a, "out_indices"_a, "rows"_a,
          "propagate"_a, "flag"_a, "marked"_a, "out"_a,
          "The sorted, distinct out-neighbours of the propagating rows into `out`; returns "
          "their count.");
}

}  // namespace webrank
