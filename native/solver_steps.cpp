// Steps of the solvers other than the power method: Anderson mixing's two passes
// (webrank.kernels.cpu_anderson), the adaptive method's step over the active rows
// (webrank.kernels.cpu_adaptive) and the fused step of a block of personalized vectors
// (webrank.kernels.cpu_ppr). The math of each is in its Python module's docstrings.
#include "common.hpp"
#include "rows.hpp"

#include <cmath>
#include <type_traits>
#include <vector>

namespace webrank {
namespace {

template <class P>
using elem_t = std::remove_const_t<std::remove_pointer_t<P>>;

// partial[c, q] = F[slot] . F[slots[q]] over the rows of chunk c, float64; partial is
// (chunks, width) with width >= slots.
void anderson_products(const In& F, int64_t slot, const In& slots, const In& bounds,
                       const Out& partial, int threads) {
    const float* Fp = data_as<const float>(F, "F");
    const int64_t* sp = data_as<const int64_t>(slots, "slots");
    const int64_t* bp = data_as<const int64_t>(bounds, "bounds");
    double* part = data_as<double>(partial, "partial");
    const int64_t chunks = static_cast<int64_t>(bounds.size()) - 1;
    const int64_t k = static_cast<int64_t>(slots.size());
    if (F.ndim() != 2 || partial.ndim() != 2 || static_cast<int64_t>(partial.shape(0)) < chunks ||
        static_cast<int64_t>(partial.shape(1)) < k)
        bad_array("partial", "must be (chunks, >= len(slots)) and F (slots, n)");
    const int64_t n = static_cast<int64_t>(F.shape(1));
    const int64_t width = static_cast<int64_t>(partial.shape(1));
    const float* a = Fp + slot * n;
    const int nt = threads_or_default(threads);
    nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t lo = bp[c], hi = bp[c + 1];
        for (int64_t q = 0; q < k; ++q) {
            const float* b = Fp + sp[q] * n;
            // four interleaved sums: one chain of dependent adds would bound the pass
            double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
            int64_t i = lo;
            for (; i + 3 < hi; i += 4) {
                a0 += static_cast<double>(a[i]) * static_cast<double>(b[i]);
                a1 += static_cast<double>(a[i + 1]) * static_cast<double>(b[i + 1]);
                a2 += static_cast<double>(a[i + 2]) * static_cast<double>(b[i + 2]);
                a3 += static_cast<double>(a[i + 3]) * static_cast<double>(b[i + 3]);
            }
            for (; i < hi; ++i) a0 += static_cast<double>(a[i]) * static_cast<double>(b[i]);
            part[c * width + q] = (a0 + a1) + (a2 + a3);
        }
    }
}

// x = sum_q coef[q] G[slots[q]], u = x (.) scale, partial[c] = weight . u over chunk c.
void anderson_mix(const In& coef, const In& slots, const In& G, const In& scale,
                  const In& weight, const Out& x, const Out& u, const In& bounds,
                  const Out& partial, int threads) {
    const double* cf = data_as<const double>(coef, "coef");
    const int64_t* sp = data_as<const int64_t>(slots, "slots");
    const double* Gp = data_as<const double>(G, "G");
    const double* sc = data_as<const double>(scale, "scale");
    const double* wt = data_as<const double>(weight, "weight");
    double* xp = data_as<double>(x, "x");
    double* up = data_as<double>(u, "u");
    const int64_t* bp = data_as<const int64_t>(bounds, "bounds");
    double* part = data_as<double>(partial, "partial");
    const int64_t chunks = static_cast<int64_t>(bounds.size()) - 1;
    const int64_t k = static_cast<int64_t>(slots.size());
    if (G.ndim() != 2 || coef.size() < slots.size()) bad_array("G", "must be (slots, n)");
    const int64_t n = static_cast<int64_t>(G.shape(1));
    const int nt = threads_or_default(threads);
    nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t c = 0; c < chunks; ++c) {
        double mass = 0.0;
        for (int64_t i = bp[c]; i < bp[c + 1]; ++i) {
            double t = 0.0;
            for (int64_t q = 0; q < k; ++q) t += cf[q] * Gp[sp[q] * n + i];
            xp[i] = t;
            const double ui = t * sc[i];
            up[i] = ui;
            mass += wt[i] * ui;
        }
        part[c] = mass;
    }
}

// One power step over the active rows rows[bounds[c]:bounds[c + 1]] of each chunk c;
// partial[c] = (residual under crit, change of the dangling mass).
void adaptive_step(const In& indptr, const In& indices, const In& vals,
                   const In& xs, const In& x, const In& v, const In& d,
                   const In& inv_out, double alpha, double dm, int crit, double theta,
                   const In& rows, const In& bounds, const Out& calm,
                   const Out& x_out, const Out& xs_out, const Out& partial,
                   int threads) {
    const double* xp = data_as<const double>(x, "x");
    const double* vp = data_as<const double>(v, "v");
    const double* dp = data_as<const double>(d, "d");
    const bool uniform_v = v.size() == 1, uniform_d = d.size() == 1;
    const double* io = data_as<const double>(inv_out, "inv_out");
    const int64_t* bp = data_as<const int64_t>(bounds, "bounds");
    uint8_t* cm = data_as<uint8_t>(calm, "calm");
    double* xo = data_as<double>(x_out, "x_out");
    double* part = data_as<double>(partial, "partial");
    const int64_t chunks = static_cast<int64_t>(bounds.size()) - 1;
    if (partial.size() < static_cast<size_t>(2 * chunks))
        bad_array("partial", "needs (chunks, 2) float64");
    const int nt = threads_or_default(threads);
    with_index(indptr, "indptr", [&](auto* ip) {
        with_index(indices, "indices", [&](auto* ix) {
            with_vals(vals, "vals", [&](auto vv) {
                with_float(xs, "xs", [&](auto* xsp) {
                    using XS = elem_t<decltype(xsp)>;
                    XS* xso = data_as<XS>(xs_out, "xs_out");
                    with_index(rows, "rows", [&](auto* rp) {
                        nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
                        for (int64_t c = 0; c < chunks; ++c) {
                            double res = 0.0, ddm = 0.0;
                            for (int64_t r = bp[c]; r < bp[c + 1]; ++r) {
                                const int64_t i = rp[r];
                                const double acc = row_sum(ip, ix, vv, xsp, i);
                                const double vi = uniform_v ? vp[0] : vp[i];
                                const double di = uniform_d ? dp[0] : dp[i];
                                const double t = alpha * acc + alpha * dm * di + (1.0 - alpha) * vi;
                                const double diff = std::fabs(t - xp[i]);
                                const double s = io[i];
                                if (s == 0.0) ddm += t - xp[i];
                                xo[i] = t;
                                xso[i] = static_cast<XS>(t * s);
                                if (diff < theta) {
                                    if (cm[i] < 255) ++cm[i];
                                } else {
                                    cm[i] = 0;
                                }
                                res = add_residual(res, diff, crit);
                            }
                            part[2 * c] = res;
                            part[2 * c + 1] = ddm;
                        }
                    });
                });
            });
        });
    });
}

// Wide vectors where the CPU has them: the block step's column loops are plain vector
// loops, and built for the SSE2 baseline alone the step of a 32-column batch on R-MAT 20
// was ~1.4x slower than Numba's (compiled for the host's AVX-512); with the clones it is
// faster. Each clone does the same IEEE operations in the same order (no contraction:
// -ffp-contract=off), so the bits do not depend on the CPU. (Needs ifunc: GCC or Clang on
// x86-64 glibc; elsewhere the baseline.)
#if defined(__x86_64__) && defined(__GLIBC__) && (defined(__GNUC__) || defined(__clang__))
#define WEBRANK_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WEBRANK_VECTOR_CLONES
#endif

// Everything a chunk of the block step reads and writes (see block_step in cpu_ppr.py).
template <class P, class I, class V, class G, class VI>
struct PprArgs {
    const P* ip;
    const I* ix;
    V vv;
    const G* g;
    const double* x;
    const VI* vptr;  // the personalization columns, CSR by row
    const VI* vcol;
    const double* vval;
    const double* coef_v;
    const double* d;
    bool shared_d;
    const double* coef_d;
    const double* inv_out;
    double alpha;
    bool delta;
    int crit;
    const int64_t* bounds;
    int64_t chunks, b;
    double* x_out;
    G* g_out;
    double* partial;
};

// Chunk c of the block step: per column q, partial[0, q, c] residual, partial[1, q, c]
// dangling mass, partial[2, q, c] mass. scratch: 5 b doubles.
template <class P, class I, class V, class G, class VI>
WEBRANK_VECTOR_CLONES void ppr_chunk(const PprArgs<P, I, V, G, VI>& a, int64_t c,
                                     double* __restrict__ scratch) {
    const int64_t b = a.b;
    double* __restrict__ A = scratch;
    double* __restrict__ O = scratch + b;
    double* __restrict__ res = scratch + 2 * b;
    double* __restrict__ dmass = scratch + 3 * b;
    double* __restrict__ tmass = scratch + 4 * b;
    for (int64_t q = 0; q < b; ++q) res[q] = dmass[q] = tmass[q] = 0.0;
    for (int64_t i = a.bounds[c]; i < a.bounds[c + 1]; ++i) {
        for (int64_t q = 0; q < b; ++q) A[q] = O[q] = 0.0;
        // even and odd links in two sums, as the scalar kernel's row_sum adds them
        int64_t e = a.ip[i];
        const int64_t end = a.ip[i + 1];
        for (; e + 1 < end; e += 2) {
            const G* __restrict__ g0 = a.g + static_cast<int64_t>(a.ix[e]) * b;
            const G* __restrict__ g1 = a.g + static_cast<int64_t>(a.ix[e + 1]) * b;
            const double w0 = static_cast<double>(a.vv[e]);
            const double w1 = static_cast<double>(a.vv[e + 1]);
            for (int64_t q = 0; q < b; ++q) {
                A[q] += w0 * static_cast<double>(g0[q]);
                O[q] += w1 * static_cast<double>(g1[q]);
            }
        }
        if (e < end) {
            const G* __restrict__ g0 = a.g + static_cast<int64_t>(a.ix[e]) * b;
            const double w0 = static_cast<double>(a.vv[e]);
            for (int64_t q = 0; q < b; ++q) A[q] += w0 * static_cast<double>(g0[q]);
        }
        const double alpha = a.alpha;
        for (int64_t q = 0; q < b; ++q) A[q] = alpha * (A[q] + O[q]);
        if (a.shared_d) {
            const double di = a.d[i];
            for (int64_t q = 0; q < b; ++q) A[q] += a.coef_d[q] * di;
        }
        for (int64_t e2 = a.vptr[i]; e2 < a.vptr[i + 1]; ++e2) {
            const int64_t col = a.vcol[e2];
            if (!a.shared_d) A[col] += a.coef_d[col] * a.vval[e2];  // d_c = v_c
            A[col] += a.coef_v[col] * a.vval[e2];
        }
        const double s = a.inv_out[i];
        G* __restrict__ go = a.g_out + i * b;
        for (int64_t q = 0; q < b; ++q) {
            go[q] = static_cast<G>(A[q] * s);
            tmass[q] += A[q];
        }
        if (s == 0.0)
            for (int64_t q = 0; q < b; ++q) dmass[q] += A[q];
        // A becomes the change of each column: t in delta steps, t - x otherwise
        const double* __restrict__ xi = a.x + i * b;
        double* __restrict__ xo = a.x_out + i * b;
        if (a.delta) {
            for (int64_t q = 0; q < b; ++q) xo[q] = xi[q] + A[q];
        } else {
            for (int64_t q = 0; q < b; ++q) {
                xo[q] = A[q];
                A[q] -= xi[q];
            }
        }
        if (a.crit == 0) {
            for (int64_t q = 0; q < b; ++q) res[q] += std::fabs(A[q]);
        } else if (a.crit == 1) {
            for (int64_t q = 0; q < b; ++q) res[q] += A[q] * A[q];
        } else {
            for (int64_t q = 0; q < b; ++q) {
                const double t = std::fabs(A[q]);
                res[q] = t > res[q] ? t : res[q];
            }
        }
    }
    for (int64_t q = 0; q < b; ++q) {
        a.partial[(0 * b + q) * a.chunks + c] = res[q];
        a.partial[(1 * b + q) * a.chunks + c] = dmass[q];
        a.partial[(2 * b + q) * a.chunks + c] = tmass[q];
    }
}

template <class P, class I, class V, class G, class VI>
void ppr_rows(const PprArgs<P, I, V, G, VI>& a, int nt) {
#pragma omp parallel num_threads(nt)
    {
        std::vector<double> scratch(5 * a.b);
#pragma omp for schedule(dynamic, 1)
        for (int64_t c = 0; c < a.chunks; ++c) ppr_chunk(a, c, scratch.data());
    }
}

void ppr_block_step(const In& indptr, const In& indices, const In& vals,
                    const In& g, const In& x, const In& vptr, const In& vcol,
                    const In& vval, const In& coef_v, const In& d,
                    const In& coef_d, const In& inv_out, double alpha, bool delta,
                    int crit, const In& bounds, const Out& x_out, const Out& g_out,
                    const Out& partial, int threads) {
    if (x.ndim() != 2 || g.ndim() != 2 || x_out.ndim() != 2 || g_out.ndim() != 2)
        bad_array("x", "x, g, x_out and g_out must be (n, b)");
    const int64_t b = static_cast<int64_t>(x.shape(1));
    if (static_cast<int64_t>(g.shape(1)) != b || static_cast<int64_t>(x_out.shape(1)) != b ||
        static_cast<int64_t>(g_out.shape(1)) != b)
        bad_array("g", "x, g, x_out and g_out must have the same columns");
    const double* xp = data_as<const double>(x, "x");
    const double* vv_p = data_as<const double>(vval, "vval");
    const double* cv = data_as<const double>(coef_v, "coef_v");
    const double* cd = data_as<const double>(coef_d, "coef_d");
    const bool shared_d = d.size() > 0;
    const double* dp = data_as<const double>(d, "d");
    const double* io = data_as<const double>(inv_out, "inv_out");
    const int64_t* bp = data_as<const int64_t>(bounds, "bounds");
    double* xo = data_as<double>(x_out, "x_out");
    double* part = data_as<double>(partial, "partial");
    const int64_t chunks = static_cast<int64_t>(bounds.size()) - 1;
    if (partial.size() < static_cast<size_t>(3 * b * chunks))
        bad_array("partial", "needs (3, b, chunks) float64");
    const int nt = threads_or_default(threads);
    with_index(indptr, "indptr", [&](auto* ip) {
        with_index(indices, "indices", [&](auto* ix) {
            with_vals(vals, "vals", [&](auto vv) {
                with_float(g, "g", [&](auto* gp) {
                    using G = elem_t<decltype(gp)>;
                    G* go = data_as<G>(g_out, "g_out");
                    with_index(vptr, "vptr", [&](auto* vpp) {
                        // (a SciPy CSR's: one index dtype for both)
                        using VI = elem_t<decltype(vpp)>;
                        const VI* vcp = data_as<const VI>(vcol, "vcol");
                        using A = PprArgs<elem_t<decltype(ip)>, elem_t<decltype(ix)>,
                                          decltype(vv), G, VI>;
                        const A args{ip, ix, vv, gp, xp, vpp, vcp, vv_p, cv, dp, shared_d, cd,
                                     io, alpha, delta, crit, bp, chunks, b, xo, go, part};
                        nb::gil_scoped_release unlocked;
                        ppr_rows(args, nt);
                    });
                });
            });
        });
    });
}

// out[k, q] = the chunk sums partial[k, q, :] added in chunk order from 0 (the residual's
// max under crit 2): the order in which fused_step (power.cpp) adds its chunk sums, so
// that a column of a block ends a step with the bits of the same column stepped alone.
void ppr_chunk_totals(const In& partial, int crit, const Out& out) {
    const double* p = data_as<const double>(partial, "partial");
    double* o = data_as<double>(out, "out");
    if (partial.ndim() != 3 || partial.shape(0) != 3 || out.size() != 3 * partial.shape(1))
        bad_array("partial", "must be (3, b, chunks) and out (3, b)");
    const int64_t rows = 3 * static_cast<int64_t>(partial.shape(1));
    const int64_t chunks = static_cast<int64_t>(partial.shape(2));
    const int64_t b = rows / 3;
    for (int64_t r = 0; r < rows; ++r) {
        const double* row = p + r * chunks;
        double acc = 0.0;
        if (r < b && crit == 2) {
            for (int64_t c = 0; c < chunks; ++c) acc = row[c] > acc ? row[c] : acc;
        } else {
            for (int64_t c = 0; c < chunks; ++c) acc += row[c];
        }
        o[r] = acc;
    }
}

}  // namespace

void register_solver_steps(nb::module_& m) {
    using namespace nb::literals;
    m.def("anderson_products", &anderson_products, "F"_a, "slot"_a, "slots"_a, "bounds"_a,
          "partial"_a, "threads"_a = 0,
          "partial[c, q] = F[slot] . F[slots[q]] over row chunk c, float64.");
    m.def("anderson_mix", &anderson_mix, "coef"_a, "slots"_a, "G"_a, "scale"_a, "weight"_a,
          "x"_a, "u"_a, "bounds"_a, "partial"_a, "threads"_a = 0,
          "x = sum_q coef[q] G[slots[q]], u = x * scale; partial[c] = weight . u over chunk c.");
    m.def("adaptive_step", &adaptive_step, "indptr"_a, "indices"_a, "vals"_a, "xs"_a, "x"_a,
          "v"_a, "d"_a, "inv_out"_a, "alpha"_a, "dm"_a, "crit"_a, "theta"_a, "rows"_a,
          "bounds"_a, "calm"_a, "x_out"_a, "xs_out"_a, "partial"_a, "threads"_a = 0,
          "One power step over the active rows; per chunk (residual, dangling-mass change) "
          "in `partial`.");
    m.def("ppr_block_step", &ppr_block_step, "indptr"_a, "indices"_a, "vals"_a, "g"_a, "x"_a,
          "vptr"_a, "vcol"_a, "vval"_a, "coef_v"_a, "d"_a, "coef_d"_a, "inv_out"_a, "alpha"_a,
          "delta"_a, "crit"_a, "bounds"_a, "x_out"_a, "g_out"_a, "partial"_a, "threads"_a = 0,
          "One fused power step of a row-major n x b block of personalized vectors.");
    m.def("ppr_chunk_totals", &ppr_chunk_totals, "partial"_a, "crit"_a, "out"_a,
          "out[k, q] = partial[k, q, :] summed in chunk order (the residual's max, crit 2).");
}

}  // namespace webrank
