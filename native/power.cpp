// The power step's kernels: the fused pull step, the partition-centric (blocked) step and
// its layout, and the row-range sums of the hybrid method. Python side:
// webrank.kernels.cpu (the math of each step is in its docstrings).
#include "common.hpp"
#include "rows.hpp"

#include <cmath>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <vector>

namespace webrank {
namespace {

// What every row of a step reads besides its link sum: the same through a run.
template <class XS>
struct RowTerms {
    const double* x;
    const double* v;
    bool v_uniform;
    const double* d;
    bool d_uniform;
    const double* inv_out;
    double alpha, dm, mass;
    int crit;
    bool delta;
    double* x_out;
    XS* xs_out;
};

struct Sums {
    double res = 0.0, dmass = 0.0, tmass = 0.0;
};

// The end of row i given acc = (P^T xs)_i: the dangling and teleport terms, x_out[i],
// xs_out[i]; adds the row's residual term, its dangling mass and its mass to s.
template <class XS>
inline void finish_row(int64_t i, double acc, const RowTerms<XS>& t, Sums& s) {
    const double vi = t.v_uniform ? t.v[0] : t.v[i];
    const double di = t.d_uniform ? t.d[0] : t.d[i];
    double y = t.alpha * acc + t.alpha * t.dm * di;
    double diff;
    if (t.delta) {
        y -= t.alpha * t.mass * vi;  // drop the mass rounding put into D
        diff = std::fabs(y);
        t.x_out[i] = t.x[i] + y;
    } else {
        y += (1.0 - t.alpha) * vi;
        diff = std::fabs(y - t.x[i]);
        t.x_out[i] = y;
    }
    const double scale = t.inv_out[i];
    t.xs_out[i] = static_cast<XS>(y * scale);
    if (scale == 0.0) s.dmass += y;
    s.res = add_residual(s.res, diff, t.crit);
    s.tmass += y;
}

std::tuple<double, double, double> reduce(const double* partial, int64_t rows, int crit) {
    double res = 0.0, dmass = 0.0, tmass = 0.0;
    for (int64_t c = 0; c < rows; ++c) {
        res = crit == 2 ? (partial[3 * c] > res ? partial[3 * c] : res) : res + partial[3 * c];
        dmass += partial[3 * c + 1];
        tmass += partial[3 * c + 2];
    }
    return {res, dmass, tmass};
}

template <class XS>
RowTerms<XS> row_terms(const In& x, const In& v, const In& d, const In& inv_out,
                       double alpha, double dm, double mass, int crit, bool delta,
                       const Out& x_out, const Out& xs_out) {
    RowTerms<XS> t;
    t.x = data_as<const double>(x, "x");
    t.v = data_as<const double>(v, "v");
    t.v_uniform = v.size() == 1;
    t.d = data_as<const double>(d, "d");
    t.d_uniform = d.size() == 1;
    t.inv_out = data_as<const double>(inv_out, "inv_out");
    t.alpha = alpha;
    t.dm = dm;
    t.mass = mass;
    t.crit = crit;
    t.delta = delta;
    t.x_out = data_as<double>(x_out, "x_out");
    t.xs_out = data_as<XS>(xs_out, "xs_out");
    return t;
}

std::tuple<double, double, double> fused_step(
    const In& indptr, const In& indices, const In& vals, const In& xs,
    const In& x, const In& v, const In& d, const In& inv_out, double alpha,
    double dm, double mass, int crit, bool delta, const In& bounds, const Out& x_out,
    const Out& xs_out, const Out& partial, int threads) {
    const int64_t* b = data_as<const int64_t>(bounds, "bounds");
    const int64_t chunks = static_cast<int64_t>(bounds.size()) - 1;
    double* part = data_as<double>(partial, "partial");
    const int nt = threads_or_default(threads);
    with_index(indptr, "indptr", [&](auto* ip) {
        with_index(indices, "indices", [&](auto* ix) {
            with_vals(vals, "vals", [&](auto vv) {
                with_float(xs, "xs", [&](auto* xsp) {
                    using XS = std::remove_const_t<std::remove_pointer_t<decltype(xsp)>>;
                    const RowTerms<XS> t = row_terms<XS>(x, v, d, inv_out, alpha, dm, mass,
                                                         crit, delta, x_out, xs_out);
                    nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
                    for (int64_t c = 0; c < chunks; ++c) {
                        Sums s;
                        for (int64_t i = b[c]; i < b[c + 1]; ++i)
                            finish_row(i, range_sum(ix, vv, xsp, ip[i], ip[i + 1]), t, s);
                        part[3 * c] = s.res;
                        part[3 * c + 1] = s.dmass;
                        part[3 * c + 2] = s.tmass;
                    }
                });
            });
        });
    });
    return reduce(part, chunks, crit);
}

std::tuple<double, double, double> blocked_step(
    const In& part_ptr, const In& edge_ptr, const In& pair_ptr, const In& pair_src,
    const In& pair_len, const In& dst_local, const In& lvals, const In& xs,
    const In& x, const In& v, const In& d, const In& inv_out, double alpha,
    double dm, double mass, int crit, bool delta, const Out& x_out, const Out& xs_out,
    const Out& partial, int threads) {
    const int64_t* pp = data_as<const int64_t>(part_ptr, "part_ptr");
    const int64_t* ep = data_as<const int64_t>(edge_ptr, "edge_ptr");
    const int64_t* qp = data_as<const int64_t>(pair_ptr, "pair_ptr");
    const uint16_t* plen = data_as<const uint16_t>(pair_len, "pair_len");
    const uint16_t* dl = data_as<const uint16_t>(dst_local, "dst_local");
    const int64_t parts = static_cast<int64_t>(part_ptr.size()) - 1;
    double* part = data_as<double>(partial, "partial");
    const int nt = threads_or_default(threads);
    with_index(pair_src, "pair_src", [&](auto* src) {
        with_vals(lvals, "lvals", [&](auto vv) {
            with_float(xs, "xs", [&](auto* xsp) {
                using XS = std::remove_const_t<std::remove_pointer_t<decltype(xsp)>>;
                const RowTerms<XS> t = row_terms<XS>(x, v, d, inv_out, alpha, dm, mass, crit,
                                                     delta, x_out, xs_out);
                nb::gil_scoped_release unlocked;
#pragma omp parallel num_threads(nt)
                {
                    std::vector<double> acc;
#pragma omp for schedule(dynamic, 1)
                    for (int64_t p = 0; p < parts; ++p) {
                        const int64_t r0 = pp[p];
                        acc.assign(static_cast<size_t>(pp[p + 1] - r0), 0.0);
                        int64_t k = ep[p];
                        for (int64_t q = qp[p]; q < qp[p + 1]; ++q) {
                            const double val = static_cast<double>(xsp[src[q]]);
                            const int64_t end = k + plen[q];
                            for (; k < end; ++k)
                                acc[dl[k]] += static_cast<double>(vv[k]) * val;
                        }
                        Sums s;
                        for (size_t r = 0; r < acc.size(); ++r)
                            finish_row(r0 + static_cast<int64_t>(r), acc[r], t, s);
                        part[3 * p] = s.res;
                        part[3 * p + 1] = s.dmass;
                        part[3 * p + 2] = s.tmass;
                    }
                }
            });
        });
    });
    return reduce(part, parts, crit);
}

// Pass 1 of the blocked layout: each partition's links in a stable order by source
// (order: offsets inside the partition's CSR range, so one source's links keep their rows
// ascending), by an LSD radix sort of 16-bit digits over key_bits bits of the source ids;
// and the number of (source, run) pairs of partition p in pair_count[p], runs cut at
// max_run links.
void blocked_layout_order(const In& indptr, const In& indices, const In& part_ptr,
                          int key_bits, int64_t max_run, const Out& order,
                          const Out& pair_count, int threads) {
    const int64_t* pp = data_as<const int64_t>(part_ptr, "part_ptr");
    const int64_t parts = static_cast<int64_t>(part_ptr.size()) - 1;
    int64_t* count_out = data_as<int64_t>(pair_count, "pair_count");
    const int nt = threads_or_default(threads);
    with_index(indptr, "indptr", [&](auto* ip) {
        with_index(indices, "indices", [&](auto* ix) {
            with_index(order, "order", [&](auto* ord_c) {
                using O = std::remove_const_t<std::remove_pointer_t<decltype(ord_c)>>;
                O* ord = const_cast<O*>(ord_c);
                nb::gil_scoped_release unlocked;
#pragma omp parallel num_threads(nt)
                {
                    std::vector<int64_t> cur, nxt, count(65537);
#pragma omp for schedule(dynamic, 1)
                    for (int64_t p = 0; p < parts; ++p) {
                        const int64_t lo = ip[pp[p]], hi = ip[pp[p + 1]];
                        const int64_t len = hi - lo;
                        cur.resize(len);
                        nxt.resize(len);
                        for (int64_t t = 0; t < len; ++t) cur[t] = t;
                        for (int shift = 0; shift < key_bits; shift += 16) {
                            std::fill(count.begin(), count.end(), 0);
                            for (int64_t t = 0; t < len; ++t)
                                ++count[((static_cast<int64_t>(ix[lo + t]) >> shift) & 0xFFFF) + 1];
                            for (int b = 0; b < 65536; ++b) count[b + 1] += count[b];
                            for (int64_t t = 0; t < len; ++t) {
                                const int64_t key =
                                    (static_cast<int64_t>(ix[lo + cur[t]]) >> shift) & 0xFFFF;
                                nxt[count[key]++] = cur[t];
                            }
                            cur.swap(nxt);
                        }
                        int64_t pairs = 0, run = 0, prev = -1;
                        for (int64_t t = 0; t < len; ++t) {
                            ord[lo + t] = static_cast<O>(cur[t]);
                            const int64_t j = ix[lo + cur[t]];
                            if (j != prev || run == max_run) {
                                ++pairs;
                                run = 0;
                                prev = j;
                            }
                            ++run;
                        }
                        count_out[p] = pairs;
                    }
                }
            });
        });
    });
}

// Pass 2: the pairs (source, links), each link's row inside its partition, and the links'
// values in layout order (weighted graphs; layout_vals empty otherwise).
void blocked_layout_fill(const In& indptr, const In& indices, const In& vals,
                         const In& part_ptr, int64_t max_run, const In& order,
                         const In& pair_ptr, const Out& pair_src, const Out& pair_len,
                         const Out& dst_local, const Out& layout_vals, int threads) {
    const int64_t* pp = data_as<const int64_t>(part_ptr, "part_ptr");
    const int64_t* qp = data_as<const int64_t>(pair_ptr, "pair_ptr");
    uint16_t* plen = data_as<uint16_t>(pair_len, "pair_len");
    uint16_t* dl = data_as<uint16_t>(dst_local, "dst_local");
    const int64_t parts = static_cast<int64_t>(part_ptr.size()) - 1;
    const bool weighted = vals.size() > 0;
    const int nt = threads_or_default(threads);
    with_index(indptr, "indptr", [&](auto* ip) {
        with_index(indices, "indices", [&](auto* ix) {
            using I = std::remove_const_t<std::remove_pointer_t<decltype(ix)>>;
            I* psrc = data_as<I>(pair_src, "pair_src");
            with_index(order, "order", [&](auto* ord) {
                const size_t vbytes = weighted ? vals.itemsize() : 0;
                if (weighted && layout_vals.dtype() != vals.dtype())
                    bad_array("layout_vals", "must have the dtype of vals");
                const char* vin = static_cast<const char*>(vals.data());
                char* vout = static_cast<char*>(layout_vals.data());
                nb::gil_scoped_release unlocked;
#pragma omp parallel num_threads(nt)
                {
                    std::vector<uint16_t> local_row;
#pragma omp for schedule(dynamic, 1)
                    for (int64_t p = 0; p < parts; ++p) {
                        const int64_t r0 = pp[p];
                        const int64_t lo = ip[r0], hi = ip[pp[p + 1]];
                        local_row.resize(hi - lo);
                        for (int64_t r = r0; r < pp[p + 1]; ++r)
                            for (int64_t k = ip[r]; k < ip[r + 1]; ++k)
                                local_row[k - lo] = static_cast<uint16_t>(r - r0);
                        int64_t q = qp[p] - 1, run = 0, prev = -1;
                        for (int64_t t = 0; t < hi - lo; ++t) {
                            const int64_t src = ord[lo + t];
                            const int64_t j = ix[lo + src];
                            if (j != prev || run == max_run) {
                                ++q;
                                psrc[q] = static_cast<I>(j);
                                plen[q] = 0;
                                run = 0;
                                prev = j;
                            }
                            ++plen[q];
                            ++run;
                            dl[lo + t] = local_row[src];
                            if (vbytes)
                                std::memcpy(vout + (lo + t) * vbytes, vin + (lo + src) * vbytes,
                                            vbytes);
                        }
                    }
                }
            });
        });
    });
}

// out[r] = sum of (vals[k] *) xs[indices[k]] for k in [begin[r], end[r]), in float64, rows
// in parallel, without the GIL (the hybrid method runs this while the GPU works).
void row_range_sums(const In& begin, const In& end, const In& indices,
                    const In& vals, const In& xs, const Out& out, int threads) {
    double* o = data_as<double>(out, "out");
    const int64_t rows = static_cast<int64_t>(begin.size());
    const int nt = threads_or_default(threads);
    with_index(begin, "begin", [&](auto* bp) {
        with_index(end, "end", [&](auto* ep) {
            with_index(indices, "indices", [&](auto* ix) {
                with_vals(vals, "vals", [&](auto vv) {
                    with_float(xs, "xs", [&](auto* xsp) {
                        nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(dynamic, 64) num_threads(nt)
                        for (int64_t r = 0; r < rows; ++r) {
                            double acc = 0.0;
                            for (int64_t k = bp[r]; k < ep[r]; ++k)
                                acc += static_cast<double>(vv[k]) * static_cast<double>(xsp[ix[k]]);
                            o[r] = acc;
                        }
                    });
                });
            });
        });
    });
}

}  // namespace

void register_power(nb::module_& m) {
    using namespace nb::literals;
    m.def("fused_step", &fused_step, "indptr"_a, "indices"_a, "vals"_a, "xs"_a, "x"_a, "v"_a,
          "d"_a, "inv_out"_a, "alpha"_a, "dm"_a, "mass"_a, "crit"_a, "delta"_a, "bounds"_a,
          "x_out"_a, "xs_out"_a, "partial"_a, "threads"_a = 0,
          "One fused power step over the row chunks `bounds`; returns (residual, dangling "
          "mass, mass) and writes the per-chunk sums to `partial`.");
    m.def("blocked_step", &blocked_step, "part_ptr"_a, "edge_ptr"_a, "pair_ptr"_a,
          "pair_src"_a, "pair_len"_a, "dst_local"_a, "lvals"_a, "xs"_a, "x"_a, "v"_a, "d"_a,
          "inv_out"_a, "alpha"_a, "dm"_a, "mass"_a, "crit"_a, "delta"_a, "x_out"_a,
          "xs_out"_a, "partial"_a, "threads"_a = 0,
          "One fused power step through a partition-centric layout; returns (residual, "
          "dangling mass, mass).");
    m.def("blocked_layout_order", &blocked_layout_order, "indptr"_a, "indices"_a,
          "part_ptr"_a, "key_bits"_a, "max_run"_a, "order"_a, "pair_count"_a, "threads"_a = 0);
    m.def("blocked_layout_fill", &blocked_layout_fill, "indptr"_a, "indices"_a, "vals"_a,
          "part_ptr"_a, "max_run"_a, "order"_a, "pair_ptr"_a, "pair_src"_a, "pair_len"_a,
          "dst_local"_a, "layout_vals"_a, "threads"_a = 0);
    m.def("row_range_sums", &row_range_sums, "begin"_a, "end"_a, "indices"_a, "vals"_a,
          "xs"_a, "out"_a, "threads"_a = 0);
}

}  // namespace webrank
