// The fixed-point step of the ``fixed`` method: ranks in unsigned Q1.63, constants in
// Q0.64, products rounded to the nearest Q1.63 (exactly, or through float64). Python side:
// webrank.kernels.cpu_fixed (the number formats and the step's math are in its docstrings).
#include "common.hpp"
#include "rows.hpp"

#include <cstdint>
#include <tuple>

namespace webrank {
namespace {

constexpr int PRODUCT_EXACT = 0;
constexpr int PRODUCT_DOUBLE = 1;

// round(a * f / 2**64) for a in Q1.63 and f in Q0.64.
inline uint64_t mulfrac(uint64_t a, uint64_t f, int product) {
    if (product == PRODUCT_DOUBLE) {
        // Sgherzi's product: both operands rounded to 53 bits, the product to float64
        const double r = static_cast<double>(a) * (static_cast<double>(f) * 0x1p-64) + 0.5;
        // a near 2**64 rounds up to 2**64: saturate (converting it to uint64 is undefined)
        return r >= 0x1p64 ? UINT64_MAX : static_cast<uint64_t>(r);
    }
#if defined(__SIZEOF_INT128__)
    // adding 2**63 rounds half up; (2**64 - 1)**2 + 2**63 < 2**128, so nothing carries out
    const unsigned __int128 p = static_cast<unsigned __int128>(a) * f + (uint64_t{1} << 63);
    return static_cast<uint64_t>(p >> 64);
#else
    // no 128-bit integer (MSVC): the high word from four 32 x 32 -> 64-bit products
    const uint64_t m32 = 0xFFFFFFFFu;
    const uint64_t a_lo = a & m32, a_hi = a >> 32, f_lo = f & m32, f_hi = f >> 32;
    const uint64_t ll = a_lo * f_lo, lh = a_lo * f_hi, hl = a_hi * f_lo;
    const uint64_t mid = (ll >> 32) + (lh & m32) + (hl & m32);  // < 3 * 2**32
    const uint64_t low = (mid << 32) | (ll & m32);
    const uint64_t high = a_hi * f_hi + (lh >> 32) + (hl >> 32) + (mid >> 32);
    return high + (low >> 63);
#endif
}

// out[i] = mulfrac(a[i], f[i]) (f[0] for every i where f has one element).
void mulfrac_array(const In& a, const In& f, int product, const Out& out) {
    const uint64_t* ap = data_as<const uint64_t>(a, "a");
    const uint64_t* fp = data_as<const uint64_t>(f, "f");
    uint64_t* op = data_as<uint64_t>(out, "out");
    const size_t n = a.size();
    if (out.size() != n) bad_array("out", "must have the size of a");
    if (f.size() != 1 && f.size() != n) bad_array("f", "must have one element or the size of a");
    const bool scalar_f = f.size() == 1;
    nb::gil_scoped_release unlocked;
    for (size_t i = 0; i < n; ++i) op[i] = mulfrac(ap[i], scalar_f ? fp[0] : fp[i], product);
}

// One fixed-point step over the row chunks `bounds` (chunk c: rows [bounds[c],
// bounds[c + 1])); per chunk its residual (float64) to partial_res[c] and its dangling
// mass (Q1.63, exact) to partial_dm[c]. Integer sums do not depend on the order of adds,
// and each chunk's float64 residual is summed in row order: the same bits at any thread
// count.
template <class P, class I>
void fixed_rows(const P* ip, const I* ix, const uint64_t* vals, bool weighted,
                const uint64_t* xs, const uint64_t* x, const uint64_t* node_scale,
                const uint64_t* tele, bool uniform_t, const uint64_t* dist, bool uniform_d,
                uint64_t alpha_q, uint64_t cdm, uint64_t dterm_uniform, int crit, int product,
                uint8_t* calm, uint64_t theta, int64_t patience, const int64_t* b,
                int64_t chunks, uint64_t* x_out, uint64_t* xs_out, double* partial_res,
                uint64_t* partial_dm, int nt) {
    const bool skipping = patience > 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t c = 0; c < chunks; ++c) {
        double res = 0.0;
        uint64_t dms = 0;
        for (int64_t i = b[c]; i < b[c + 1]; ++i) {
            if (skipping && calm[i] >= patience) {  // converged: keep it, gather nothing
                x_out[i] = x[i];
                xs_out[i] = xs[i];
                if (node_scale[i] == 0) dms += x[i];
                continue;
            }
            uint64_t acc = 0;
            if (weighted) {
                for (int64_t k = ip[i]; k < ip[i + 1]; ++k)
                    acc += mulfrac(x[ix[k]], vals[k], product);
            } else {
                for (int64_t k = ip[i]; k < ip[i + 1]; ++k) acc += xs[ix[k]];
            }
            uint64_t t = mulfrac(acc, alpha_q, product);
            t += uniform_d ? dterm_uniform : mulfrac(cdm, dist[i], product);
            t += uniform_t ? tele[0] : tele[i];
            const uint64_t xi = x[i];
            const uint64_t diff = t >= xi ? t - xi : xi - t;  // exact, in ulps
            x_out[i] = t;
            if (skipping) {
                if (diff > theta)
                    calm[i] = 0;
                else if (calm[i] < 255)
                    ++calm[i];
            }
            const uint64_t s = node_scale[i];
            if (s == 0) {
                dms += t;
                xs_out[i] = 0;
            } else if (weighted) {
                xs_out[i] = 0;  // weighted rows gather x itself
            } else {
                xs_out[i] = mulfrac(t, s, product);
            }
            res = add_residual(res, static_cast<double>(diff), crit);
        }
        partial_res[c] = res;
        partial_dm[c] = dms;
    }
}

void fixed_step(const In& indptr, const In& indices, const In& vals, const In& xs,
                const In& x, const In& node_scale, const In& tele, const In& dist,
                uint64_t alpha_q, uint64_t dm, int crit, int product, const Out& calm,
                uint64_t theta, int64_t patience, const In& bounds, const Out& x_out,
                const Out& xs_out, const Out& partial_res, const Out& partial_dm,
                int threads) {
    const int64_t n = static_cast<int64_t>(indptr.size()) - 1;
    const uint64_t* vp = data_as<const uint64_t>(vals, "vals");
    const bool weighted = vals.size() > 0;
    const uint64_t* xsp = data_as<const uint64_t>(xs, "xs");
    const uint64_t* xp = data_as<const uint64_t>(x, "x");
    const uint64_t* sp = data_as<const uint64_t>(node_scale, "node_scale");
    const uint64_t* tp = data_as<const uint64_t>(tele, "tele");
    const uint64_t* dp = data_as<const uint64_t>(dist, "dist");
    uint8_t* cp = data_as<uint8_t>(calm, "calm");
    const int64_t* b = data_as<const int64_t>(bounds, "bounds");
    const int64_t chunks = static_cast<int64_t>(bounds.size()) - 1;
    uint64_t* xo = data_as<uint64_t>(x_out, "x_out");
    uint64_t* xso = data_as<uint64_t>(xs_out, "xs_out");
    double* pr = data_as<double>(partial_res, "partial_res");
    uint64_t* pd = data_as<uint64_t>(partial_dm, "partial_dm");
    if (chunks > 0 && (partial_res.size() < static_cast<size_t>(chunks) ||
                       partial_dm.size() < static_cast<size_t>(chunks)))
        bad_array("partial_res", "must hold one entry per chunk");
    if (patience > 0 && calm.size() < static_cast<size_t>(n > 0 ? n : 0))
        bad_array("calm", "must hold one entry per row");
    const uint64_t cdm = mulfrac(dm, alpha_q, product);  // alpha * dangling mass, Q1.63
    const uint64_t nn = static_cast<uint64_t>(n > 0 ? n : 1);
    const uint64_t dterm_uniform = (cdm + nn / 2) / nn;  // alpha * dm / n, rounded
    const int nt = threads_or_default(threads);
    with_index(indptr, "indptr", [&](auto* ip) {
        with_index(indices, "indices", [&](auto* ix) {
            nb::gil_scoped_release unlocked;
            fixed_rows(ip, ix, vp, weighted, xsp, xp, sp, tp, tele.size() == 1, dp,
                       dist.size() == 0, alpha_q, cdm, dterm_uniform, crit, product, cp, theta,
                       patience, b, chunks, xo, xso, pr, pd, nt);
        });
    });
}

}  // namespace

void register_fixed(nb::module_& m) {
    using namespace nb::literals;
    m.def("mulfrac_array", &mulfrac_array, "a"_a, "f"_a, "product"_a, "out"_a,
          "out[i] = round(a[i] * f[i] / 2**64) (uint64; f may have one element).");
    m.def("fixed_step", &fixed_step, "indptr"_a, "indices"_a, "vals"_a, "xs"_a, "x"_a,
          "node_scale"_a, "tele"_a, "dist"_a, "alpha_q"_a, "dm"_a, "crit"_a, "product"_a,
          "calm"_a, "theta"_a, "patience"_a, "bounds"_a, "x_out"_a, "xs_out"_a,
          "partial_res"_a, "partial_dm"_a, "threads"_a = 0,
          "One fixed-point step over the row chunks `bounds`; writes per-chunk residuals "
          "and dangling masses to `partial_res` and `partial_dm`.");
}

}  // namespace webrank
