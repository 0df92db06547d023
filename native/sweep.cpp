// The Gauss-Seidel sweep's kernels: the block sweep and the passes that build its layout
// (the swept rows' links, the halo marks, the links into the lumped rows). Python side:
// webrank.kernels.cpu_gauss_seidel (the math and the layout are in its docstrings).
#include "common.hpp"
#include "rows.hpp"

#include <cmath>
#include <tuple>
#include <type_traits>

namespace webrank {
namespace {

template <class P>
using elem_t = std::remove_const_t<std::remove_pointer_t<P>>;

// Where a sweep's rows also go (an Anderson mixer's history): F[slot, i] = new - old in
// float32, G[slot, i] = new; F and G are (slots, n) row-major.
struct Record {
    float* F;
    double* G;
};

// One sweep of the rows of blocks [0, blocks): row i's new value from its links (even in
// count: the layout pads odd rows), written to x and u in place; per block the change
// under crit and the new values' links into the lumped rows, in partial[b, 0..1].
template <bool kRecord, class I, class V>
void sweep_blocks(const int64_t* bounds, int64_t blocks, const int64_t* indptr, const I* ix,
                  V vv, const double* scale, const double* v, int64_t v_stride,
                  const double* d, int64_t d_stride, const double* mass_weight,
                  const float* row_scale, double alpha, double dm, int crit, double* x,
                  double* u, double* partial, Record rec, int nt) {
    const double tele_scale = 1.0 - alpha;
    const double dist_scale = alpha * dm;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t b = 0; b < blocks; ++b) {
        double change = 0.0;
        double links_into = 0.0;
        for (int64_t i = bounds[b]; i < bounds[b + 1]; ++i) {
            const double old = x[i];
            const double s = static_cast<double>(row_scale[i]);
            // the row's terms without its links first: off the chain through the sums
            const double rest =
                (dist_scale * d[i * d_stride] + tele_scale * v[i * v_stride]) * s -
                (s - 1.0) * old;
            const double nw = range_sum(ix, vv, u, indptr[i], indptr[i + 1]) * (alpha * s) + rest;
            x[i] = nw;
            const double ui = nw * scale[i];
            u[i] = ui;
            links_into += mass_weight[i] * ui;
            change = add_residual(change, std::fabs(nw - old), crit);
            if constexpr (kRecord) {
                rec.F[i] = static_cast<float>(nw - old);
                rec.G[i] = nw;
            }
        }
        partial[2 * b] = change;
        partial[2 * b + 1] = links_into;
    }
}

void block_sweep(const In& bounds, const In& indptr, const In& indices,
                 const In& vals, const In& scale, const In& v, const In& d,
                 const In& mass_weight, const In& row_scale, double alpha, double dm,
                 int crit, const Out& x, const Out& u, const Out& partial, bool record,
                 const Out& F, const Out& G, int64_t slot, int threads) {
    const int64_t* bp = data_as<const int64_t>(bounds, "bounds");
    const int64_t blocks = static_cast<int64_t>(bounds.size()) - 1;
    const int64_t* ip = data_as<const int64_t>(indptr, "indptr");
    const double* sc = data_as<const double>(scale, "scale");
    const double* vp = data_as<const double>(v, "v");
    const double* dp = data_as<const double>(d, "d");
    // a uniform v or d is one number, read at index 0 (stride 0): no branch per row
    const int64_t v_stride = v.size() == 1 ? 0 : 1;
    const int64_t d_stride = d.size() == 1 ? 0 : 1;
    const double* mw = data_as<const double>(mass_weight, "mass_weight");
    const float* rs = data_as<const float>(row_scale, "row_scale");
    double* xp = data_as<double>(x, "x");
    double* up = data_as<double>(u, "u");
    double* part = data_as<double>(partial, "partial");
    if (partial.size() < static_cast<size_t>(2 * blocks))
        bad_array("partial", "needs (blocks, 2) float64");
    Record rec{nullptr, nullptr};
    if (record) {
        float* Fp = data_as<float>(F, "F");
        double* Gp = data_as<double>(G, "G");
        if (F.ndim() != 2 || G.ndim() != 2 || F.shape(1) != x.size() || G.shape(1) != x.size() ||
            slot < 0 || static_cast<size_t>(slot) >= F.shape(0) ||
            static_cast<size_t>(slot) >= G.shape(0))
            bad_array("F", "and G must be (slots, n) with slot < slots");
        rec = Record{Fp + slot * static_cast<int64_t>(x.size()),
                     Gp + slot * static_cast<int64_t>(x.size())};
    }
    const int nt = threads_or_default(threads);
    with_index(indices, "indices", [&](auto* ix) {
        with_vals(vals, "vals", [&](auto vv) {
            nb::gil_scoped_release unlocked;
            if (record)
                sweep_blocks<true>(bp, blocks, ip, ix, vv, sc, vp, v_stride, dp, d_stride, mw,
                                   rs, alpha, dm, crit, xp, up, part, rec, nt);
            else
                sweep_blocks<false>(bp, blocks, ip, ix, vv, sc, vp, v_stride, dp, d_stride, mw,
                                    rs, alpha, dm, crit, xp, up, part, rec, nt);
        });
    });
}

// out[c] = row keep[c]'s links from kept nodes (compact[j] >= 0).
void kept_counts(const In& indptr, const In& indices, const In& compact,
                 const In& keep, const Out& out, int threads) {
    const int64_t* cp = data_as<const int64_t>(compact, "compact");
    int64_t* o = data_as<int64_t>(out, "out");
    const int64_t rows = static_cast<int64_t>(keep.size());
    if (out.size() != keep.size()) bad_array("out", "must have keep's length");
    const int nt = threads_or_default(threads);
    with_index(indptr, "indptr", [&](auto* ip) {
        with_index(indices, "indices", [&](auto* ix) {
            with_index(keep, "keep", [&](auto* kp) {
                nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(dynamic, 1024) num_threads(nt)
                for (int64_t c = 0; c < rows; ++c) {
                    int64_t count = 0;
                    for (int64_t e = ip[kp[c]]; e < ip[kp[c] + 1]; ++e)
                        count += cp[ix[e]] >= 0;
                    o[c] = count;
                }
            });
        });
    });
}

// mark[s] = 1 for each kept node s read by a row of another block.
void mark_across(const In& indptr, const In& indices, const In& compact,
                 const In& keep, const In& bounds, const Out& mark, int threads) {
    const int64_t* cp = data_as<const int64_t>(compact, "compact");
    const int64_t* bp = data_as<const int64_t>(bounds, "bounds");
    const int64_t blocks = static_cast<int64_t>(bounds.size()) - 1;
    uint8_t* mk = data_as<uint8_t>(mark, "mark");
    const int nt = threads_or_default(threads);
    with_index(indptr, "indptr", [&](auto* ip) {
        with_index(indices, "indices", [&](auto* ix) {
            with_index(keep, "keep", [&](auto* kp) {
                nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
                for (int64_t b = 0; b < blocks; ++b) {
                    const int64_t lo = bp[b], hi = bp[b + 1];
                    for (int64_t c = lo; c < hi; ++c)
                        for (int64_t e = ip[kp[c]]; e < ip[kp[c] + 1]; ++e) {
                            const int64_t s = cp[ix[e]];
                            if (s >= 0 && !(lo <= s && s < hi)) {
                                // threads may write the same 1 at once: no order matters
#pragma omp atomic write
                                mk[s] = 1;
                            }
                        }
                }
            });
        });
    });
}

// Each kept row's kept links in CSR order (its own block's nodes as they are, others as
// their halo slot), a padding link to zero_slot where the count is odd; its self-loops'
// values (vals[e], or self_value[c] unweighted) in self_weight[c].
void fill_layout(const In& indptr, const In& indices, const In& vals,
                 const In& compact, const In& keep, const In& bounds,
                 const In& slot, const In& padded_ptr, int64_t zero_slot,
                 const In& self_value, const Out& padded, const Out& padded_vals,
                 const Out& self_weight, int threads) {
    const int64_t* cp = data_as<const int64_t>(compact, "compact");
    const int64_t* bp = data_as<const int64_t>(bounds, "bounds");
    const int64_t blocks = static_cast<int64_t>(bounds.size()) - 1;
    const int64_t* sl = data_as<const int64_t>(slot, "slot");
    const int64_t* pp = data_as<const int64_t>(padded_ptr, "padded_ptr");
    const double* sv = data_as<const double>(self_value, "self_value");
    double* sw = data_as<double>(self_weight, "self_weight");
    const bool weighted = vals.size() > 0;
    const double* vp = weighted ? data_as<const double>(vals, "vals") : nullptr;
    double* pv = weighted ? data_as<double>(padded_vals, "padded_vals") : nullptr;
    const int nt = threads_or_default(threads);
    with_index(indptr, "indptr", [&](auto* ip) {
        with_index(indices, "indices", [&](auto* ix) {
            with_index(keep, "keep", [&](auto* kp) {
                with_index(padded, "padded", [&](auto* pd_c) {
                    using O = elem_t<decltype(pd_c)>;
                    O* pd = const_cast<O*>(pd_c);
                    nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
                    for (int64_t b = 0; b < blocks; ++b) {
                        const int64_t lo = bp[b], hi = bp[b + 1];
                        for (int64_t c = lo; c < hi; ++c) {
                            const int64_t i = kp[c];
                            int64_t p = pp[c];
                            double loops = 0.0;
                            for (int64_t e = ip[i]; e < ip[i + 1]; ++e) {
                                const int64_t s = cp[ix[e]];
                                if (s < 0) continue;
                                if (s == c) loops += weighted ? vp[e] : sv[c];
                                pd[p] = static_cast<O>(lo <= s && s < hi ? s : sl[s]);
                                if (weighted) pv[p] = vp[e];
                                ++p;
                            }
                            if (p < pp[c + 1]) pd[p] = static_cast<O>(zero_slot);
                            sw[c] = loops;
                        }
                    }
                });
            });
        });
    });
}

// out[s] += each kept node's links into the dropped rows (valued, or 1), in one ordered
// pass: the sums' bits do not depend on the thread count.
void links_into(const In& indptr, const In& indices, const In& vals,
                const In& compact, const In& dropped, const Out& out) {
    const int64_t* cp = data_as<const int64_t>(compact, "compact");
    double* o = data_as<double>(out, "out");
    const int64_t rows = static_cast<int64_t>(dropped.size());
    const bool weighted = vals.size() > 0;
    const double* vp = weighted ? data_as<const double>(vals, "vals") : nullptr;
    with_index(indptr, "indptr", [&](auto* ip) {
        with_index(indices, "indices", [&](auto* ix) {
            with_index(dropped, "dropped", [&](auto* dp) {
                nb::gil_scoped_release unlocked;
                for (int64_t r = 0; r < rows; ++r) {
                    const int64_t i = dp[r];
                    for (int64_t e = ip[i]; e < ip[i + 1]; ++e) {
                        const int64_t s = cp[ix[e]];
                        if (s >= 0) o[s] += weighted ? vp[e] : 1.0;
                    }
                }
            });
        });
    });
}

}  // namespace

void register_sweep(nb::module_& m) {
    using namespace nb::literals;
    m.def("block_sweep", &block_sweep, "bounds"_a, "indptr"_a, "indices"_a, "vals"_a,
          "scale"_a, "v"_a, "d"_a, "mass_weight"_a, "row_scale"_a, "alpha"_a, "dm"_a,
          "crit"_a, "x"_a, "u"_a, "partial"_a, "record"_a, "F"_a, "G"_a, "slot"_a,
          "threads"_a = 0,
          "One Gauss-Seidel sweep over row blocks, x and u in place; per block the change "
          "and the links into the lumped rows go to `partial`.");
    m.def("sweep_kept_counts", &kept_counts, "indptr"_a, "indices"_a, "compact"_a, "keep"_a,
          "out"_a, "threads"_a = 0);
    m.def("sweep_mark_across", &mark_across, "indptr"_a, "indices"_a, "compact"_a, "keep"_a,
          "bounds"_a, "mark"_a, "threads"_a = 0);
    m.def("sweep_fill_layout", &fill_layout, "indptr"_a, "indices"_a, "vals"_a, "compact"_a,
          "keep"_a, "bounds"_a, "slot"_a, "padded_ptr"_a, "zero_slot"_a, "self_value"_a,
          "padded"_a, "padded_vals"_a, "self_weight"_a, "threads"_a = 0);
    m.def("sweep_links_into", &links_into, "indptr"_a, "indices"_a, "vals"_a, "compact"_a,
          "dropped"_a, "out"_a);
}

}  // namespace webrank
