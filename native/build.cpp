// The kernels of the parallel CSR build (edge columns in chunks -> in-link CSR): id range,
// presence of ids and bucket counts, the scatter to buckets, the per-bucket sort and
// merge, the packing of merged rows, out-degree sums. Python side:
// webrank.kernels.cpu_build (the steps and the arrays' contracts are in its docstrings).
#include "common.hpp"

#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace webrank {
namespace {


template <class P>
using elem_t = std::remove_const_t<std::remove_pointer_t<P>>;

constexpr int COLLAPSE = 0, SUM = 1;
constexpr int64_t INSERTION_MAX = 24;  // rows up to this long: insertion sort, in cache

// Calls f with a typed pointer to an id column: Graph.from_edges keeps the caller's
// signed integer width, so any of the four (and src and dst may differ).
template <class F>
void with_id(const In& a, const char* name, F&& f) {
    checked_size(a, name);
    switch (kind_of(a)) {
        case Kind::i8: return f(static_cast<const int8_t*>(a.data()));
        case Kind::i16: return f(static_cast<const int16_t*>(a.data()));
        case Kind::i32: return f(static_cast<const int32_t*>(a.data()));
        case Kind::i64: return f(static_cast<const int64_t*>(a.data()));
        default: bad_array(name, "must be a signed integer array");
    }
}

// An optional int32 or int64 output (per-id counts): the typed pointer of its dtype,
// the other null. Written rarely (once per run of links), so a branch, not a template.
struct Counts {
    int32_t* i32 = nullptr;
    int64_t* i64 = nullptr;
    void add(int64_t at, int64_t x) const {
        if (i32)
            i32[at] += static_cast<int32_t>(x);
        else
            i64[at] += x;
    }
};

Counts counts_of(const Out& a, const char* name) {
    checked_size(a, name);
    Counts c;
    switch (kind_of(a)) {
        case Kind::i32: c.i32 = static_cast<int32_t*>(a.data()); break;
        case Kind::i64: c.i64 = static_cast<int64_t*>(a.data()); break;
        default: bad_array(name, "must be int32 or int64");
    }
    return c;
}

// Chunk c of a column is [starts[c], starts[c] + counts[c]): each must lie in the column
// (checked once here, so that the loops need not).
void check_chunks(const int64_t* s, const int64_t* n, int64_t chunks, size_t size,
                  const char* what) {
    for (int64_t c = 0; c < chunks; ++c)
        if (s[c] < 0 || n[c] < 0 || static_cast<size_t>(s[c] + n[c]) > size)
            throw nb::value_error((std::string("chunk ") + std::to_string(c) +
                                   " lies outside the column '" + what + "'")
                                      .c_str());
}

template <class A>
void check_shape(const A& a, const char* name, int64_t rows, int64_t cols) {
    if (a.ndim() != 2 || static_cast<int64_t>(a.shape(0)) != rows ||
        static_cast<int64_t>(a.shape(1)) != cols)
        bad_array(name, ("must have the shape (" + std::to_string(rows) + ", " +
                         std::to_string(cols) + ")").c_str());
}

template <class A>
void check_size(const A& a, const char* name, int64_t size) {
    if (static_cast<int64_t>(checked_size(a, name)) != size)
        bad_array(name, ("must have " + std::to_string(size) + " entries").c_str());
}

// The chunks of the edge columns (chunk c is [start[c], start[c] + count[c]) of both),
// checked once here so that the loops need not.
struct EdgeChunks {
    const int64_t* start;
    const int64_t* count;
    int64_t size;
};

EdgeChunks edge_chunks(const In& src, const In& dst, const In& starts, const In& counts) {
    const EdgeChunks c{data_as<const int64_t>(starts, "starts"),
                       data_as<const int64_t>(counts, "counts"),
                       static_cast<int64_t>(starts.size())};
    check_size(counts, "counts", c.size);
    check_chunks(c.start, c.count, c.size, std::min(src.size(), dst.size()), "src/dst");
    return c;
}

// A byte of `present` set to 1, read first: a store takes the cache line from every
// other core, most ids occur many times. Relaxed atomics: threads race on the same
// byte, all writing 1.
inline void mark(uint8_t* p) {
#if defined(__GNUC__) || defined(__clang__)
    if (__atomic_load_n(p, __ATOMIC_RELAXED) == 0) __atomic_store_n(p, 1, __ATOMIC_RELAXED);
#else
    if (*p == 0) *p = 1;
#endif
}

void id_bounds(const In& src, const In& dst, const In& starts, const In& counts,
               const Out& lo, const Out& hi, int threads) {
    const EdgeChunks ch = edge_chunks(src, dst, starts, counts);
    const int64_t *s = ch.start, *n = ch.count;
    const int64_t chunks = ch.size;
    check_size(lo, "lo", chunks);
    check_size(hi, "hi", chunks);
    int64_t* lo_out = data_as<int64_t>(lo, "lo");
    int64_t* hi_out = data_as<int64_t>(hi, "hi");
    const int nt = threads_or_default(threads);
    with_id(src, "src", [&](auto* sp) {
        with_id(dst, "dst", [&](auto* dp) {
            nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
            for (int64_t c = 0; c < chunks; ++c) {
                int64_t a = std::numeric_limits<int64_t>::max(), b = -1;
                for (int64_t k = s[c]; k < s[c] + n[c]; ++k) {
                    const int64_t u = sp[k], v = dp[k];
                    a = std::min(a, std::min(u, v));
                    b = std::max(b, std::max(u, v));
                }
                lo_out[c] = a;
                hi_out[c] = b;
            }
        });
    });
}

void mark_and_count(const In& src, const In& dst, const In& starts, const In& counts,
                    const Out& present, int shift, const Out& fine,
                    const Out& src_ends, int threads) {
    const EdgeChunks ch = edge_chunks(src, dst, starts, counts);
    const int64_t *s = ch.start, *n = ch.count;
    const int64_t chunks = ch.size;
    uint8_t* pres = data_as<uint8_t>(present, "present");
    const bool marking = present.size() > 0;
    if (fine.ndim() != 2) bad_array("fine", "must be 2-D");
    const int64_t nfine = static_cast<int64_t>(fine.shape(1));
    check_shape(fine, "fine", chunks, nfine);
    int64_t* f = data_as<int64_t>(fine, "fine");
    check_shape(src_ends, "src_ends", chunks, 3);
    int64_t* ends = data_as<int64_t>(src_ends, "src_ends");
    const int nt = threads_or_default(threads);
    with_id(src, "src", [&](auto* sp) {
        with_id(dst, "dst", [&](auto* dp) {
            nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
            for (int64_t c = 0; c < chunks; ++c) {
                const int64_t a = s[c], e = a + n[c];
                int64_t* fc = f + c * nfine;
                int64_t ordered = 1;
                int64_t prev = e > a ? static_cast<int64_t>(sp[a]) : 0;
                for (int64_t k = a; k < e; ++k) {
                    const int64_t u = sp[k], v = dp[k];
                    ++fc[v >> shift];
                    if (u < prev) ordered = 0;
                    prev = u;
                    if (marking) {
                        mark(pres + u);
                        mark(pres + v);
                    }
                }
                if (e > a) {
                    ends[3 * c] = sp[a];
                    ends[3 * c + 1] = sp[e - 1];
                }
                ends[3 * c + 2] = ordered;
            }
        });
    });
}

void sum_rows(const In& counts, const In& node_ids, const Out& out, int threads) {
    if (counts.ndim() != 2) bad_array("counts", "must be 2-D");
    const int64_t groups = static_cast<int64_t>(counts.shape(0));
    const int64_t width = static_cast<int64_t>(counts.shape(1));
    const int64_t* ids = data_as<const int64_t>(node_ids, "node_ids");
    const bool at_ids = node_ids.size() > 0;
    const int64_t n = at_ids ? static_cast<int64_t>(node_ids.size()) : width;
    check_size(out, "out", n);
    double* o = data_as<double>(out, "out");
    const int nt = threads_or_default(threads);
    with_index(counts, "counts", [&](auto* cp) {
        nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t i = 0; i < n; ++i) {
            const int64_t j = at_ids ? ids[i] : i;
            int64_t t = 0;
            for (int64_t g = 0; g < groups; ++g) t += cp[g * width + j];
            o[i] = static_cast<double>(t);
        }
    });
}

void scatter(const In& src, const In& dst, const In& w_, const In& starts,
             const In& counts, const In& newid_, int shift, const In& coarse_of_,
             const In& cursor, const Out& keys, const Out& out_w,
             const Out& out_links, const Out& edge_runs, int threads) {
    const EdgeChunks ch = edge_chunks(src, dst, starts, counts);
    const int64_t *s = ch.start, *n = ch.count;
    const int64_t chunks = ch.size;
    const bool weighted = out_w.size() > 0;
    const double* w = data_as<const double>(w_, "w");
    double* ow = data_as<double>(out_w, "out_w");
    if (weighted) check_chunks(s, n, chunks, w_.size(), "w");
    const int32_t* newid = data_as<const int32_t>(newid_, "newid");
    const bool renumber = newid_.size() > 0;
    const int32_t* coarse_of = data_as<const int32_t>(coarse_of_, "coarse_of");
    if (cursor.ndim() != 2) bad_array("cursor", "must be 2-D");
    const int64_t nbuckets = static_cast<int64_t>(cursor.shape(1));
    check_shape(cursor, "cursor", chunks, nbuckets);
    const int64_t* cur0 = data_as<const int64_t>(cursor, "cursor");
    int64_t* kp = data_as<int64_t>(keys, "keys");
    const bool runs = out_links.size() > 0;
    const Counts links = counts_of(out_links, "out_links");
    check_shape(edge_runs, "edge_runs", chunks, 2);
    int64_t* er = data_as<int64_t>(edge_runs, "edge_runs");
    const int nt = threads_or_default(threads);
    with_id(src, "src", [&](auto* sp) {
        with_id(dst, "dst", [&](auto* dp) {
            nb::gil_scoped_release unlocked;
#pragma omp parallel num_threads(nt)
            {
                std::vector<int64_t> cur;
#pragma omp for schedule(dynamic, 1)
                for (int64_t c = 0; c < chunks; ++c) {
                    const int64_t a = s[c], e = a + n[c];
                    cur.assign(cur0 + c * nbuckets, cur0 + (c + 1) * nbuckets);
                    int64_t run = 0;  // links of the current run of one source
                    bool first_run = true;
                    for (int64_t k = a; k < e; ++k) {
                        const int64_t v = dp[k];
                        const int64_t p = cur[coarse_of[v >> shift]]++;
                        const int64_t u = renumber ? static_cast<int64_t>(newid[sp[k]])
                                                   : static_cast<int64_t>(sp[k]);
                        kp[p] = static_cast<int64_t>((static_cast<uint64_t>(v) << 32) |
                                                     static_cast<uint64_t>(u));
                        if (weighted) ow[p] = w[k];
                        if (runs) {
                            if (k > a && sp[k] != sp[k - 1]) {  // a run ends
                                if (first_run) {
                                    er[2 * c] = run;
                                    first_run = false;
                                } else {
                                    links.add(sp[k - 1], run);
                                }
                                run = 0;
                            }
                            ++run;
                        }
                    }
                    if (runs && e > a) {
                        if (first_run)
                            er[2 * c] = run;
                        else
                            er[2 * c + 1] = run;
                    }
                }
            }
        });
    });
}

// Stable sort of ind[a:e] (and w alongside where with_w).
inline void insertion_sort(int32_t* ind, double* w, int64_t a, int64_t e, bool with_w) {
    for (int64_t i = a + 1; i < e; ++i) {
        const int32_t k = ind[i];
        const double v = with_w ? w[i] : 0.0;
        int64_t j = i - 1;
        while (j >= a && ind[j] > k) {
            ind[j + 1] = ind[j];
            if (with_w) w[j + 1] = w[j];
            --j;
        }
        ind[j + 1] = k;
        if (with_w) w[j + 1] = v;
    }
}

inline bool is_sorted_distinct(const int32_t* ind, int64_t a, int64_t e) {
    for (int64_t k = a + 1; k < e; ++k)
        if (ind[k] <= ind[k - 1]) return false;
    return true;
}

void sort_buckets(const In& bucket_start, const In& id_start, const In& keys,
                  const In& w_in_, const In& newid_, const Out& indices, const Out& w_,
                  const Out& row_kept, const Out& bucket_kept, int mode,
                  bool count_weights, int threads) {
    const int64_t* bs = data_as<const int64_t>(bucket_start, "bucket_start");
    const int64_t* is = data_as<const int64_t>(id_start, "id_start");
    const int64_t nbuckets = static_cast<int64_t>(bucket_start.size()) - 1;
    if (nbuckets < 0) bad_array("bucket_start", "must not be empty");
    check_size(id_start, "id_start", nbuckets + 1);
    check_size(bucket_kept, "bucket_kept", nbuckets);
    const int64_t m = static_cast<int64_t>(keys.size());
    const int64_t* kp = data_as<const int64_t>(keys, "keys");
    const bool weighted = w_in_.size() > 0;
    const double* w_in = data_as<const double>(w_in_, "w_in");
    const int32_t* newid = data_as<const int32_t>(newid_, "newid");
    const bool renumber = newid_.size() > 0;
    int32_t* ind = data_as<int32_t>(indices, "indices");
    double* w = data_as<double>(w_, "w");
    int64_t* rk = data_as<int64_t>(row_kept, "row_kept");
    int64_t* bk = data_as<int64_t>(bucket_kept, "bucket_kept");
    if (bs[0] < 0 || bs[nbuckets] > m || static_cast<int64_t>(indices.size()) < m)
        bad_array("bucket_start", "must lie in keys and indices");
    for (int64_t b = 0; b < nbuckets; ++b)
        if (bs[b + 1] < bs[b] || is[b + 1] < is[b])
            bad_array("bucket_start", "and id_start must not decrease");
    const size_t rows = renumber ? newid_.size() : row_kept.size();
    if (is[0] < 0 || static_cast<size_t>(is[nbuckets]) > rows)
        bad_array("id_start", "must lie in the id space");
    if ((weighted && (static_cast<int64_t>(w_in_.size()) < m)) ||
        ((weighted || count_weights) && static_cast<int64_t>(w_.size()) < m))
        bad_array("w", "must have an entry per key");
    const int nt = threads_or_default(threads);
    nb::gil_scoped_release unlocked;
#pragma omp parallel num_threads(nt)
    {
        std::vector<int64_t> start, pos;
        std::vector<std::pair<int32_t, double>> row;
#pragma omp for schedule(dynamic, 1)
        for (int64_t b = 0; b < nbuckets; ++b) {
            const int64_t o0 = bs[b], o1 = bs[b + 1];
            const int64_t t0 = is[b];
            const int64_t nrows = is[b + 1] - t0;
            // counting sort by target row
            start.assign(static_cast<size_t>(nrows + 1), 0);
            for (int64_t k = o0; k < o1; ++k) ++start[(kp[k] >> 32) - t0 + 1];
            for (int64_t i = 0; i < nrows; ++i) start[i + 1] += start[i];
            pos.assign(start.begin(), start.begin() + nrows);
            for (int64_t k = o0; k < o1; ++k) {
                const int64_t i = (kp[k] >> 32) - t0;
                const int64_t p = o0 + pos[i]++;
                ind[p] = static_cast<int32_t>(kp[k] & 0xFFFFFFFF);
                if (weighted) w[p] = w_in[k];
            }
            int64_t out = o0;
            for (int64_t i = 0; i < nrows; ++i) {
                const int64_t a = o0 + start[i], e = o0 + start[i + 1];
                if (a == e) continue;
                const int64_t row_id = renumber ? newid[t0 + i] : t0 + i;
                if (is_sorted_distinct(ind, a, e)) {  // (files in source order: most rows)
                    if (out < a) {  // rows before lost links: move up
                        for (int64_t k = a; k < e; ++k) {
                            ind[out + k - a] = ind[k];
                            if (weighted || count_weights)
                                w[out + k - a] = weighted ? w[k] : 1.0;
                        }
                    } else if (count_weights) {
                        std::fill(w + a, w + e, 1.0);
                    }
                    rk[row_id] = e - a;
                    out += e - a;
                    continue;
                }
                if (e - a <= INSERTION_MAX) {
                    insertion_sort(ind, w, a, e, weighted);
                } else if (weighted) {  // stable: parallel edges stay in file order
                    row.resize(static_cast<size_t>(e - a));
                    for (int64_t k = a; k < e; ++k) row[k - a] = {ind[k], w[k]};
                    std::stable_sort(row.begin(), row.end(), [](const auto& x, const auto& y) {
                        return x.first < y.first;
                    });
                    for (int64_t k = a; k < e; ++k) {
                        ind[k] = row[k - a].first;
                        w[k] = row[k - a].second;
                    }
                } else {
                    std::sort(ind + a, ind + e);
                }
                const int64_t first = out;
                for (int64_t k = a; k < e; ++k) {
                    const int32_t u = ind[k];
                    if (out > first && ind[out - 1] == u) {  // a parallel edge
                        if (weighted) {
                            if (mode == SUM)
                                w[out - 1] += w[k];
                            else
                                w[out - 1] = w[k];
                        } else if (count_weights) {
                            w[out - 1] += 1.0;
                        }
                        continue;
                    }
                    ind[out] = u;
                    if (weighted)
                        w[out] = w[k];
                    else if (count_weights)
                        w[out] = 1.0;
                    ++out;
                }
                rk[row_id] = out - first;
            }
            bk[b] = out - o0;
        }
    }
}

void gather_rows(const In& bucket_start, const In& bucket_dest, const In& bucket_kept,
                 const In& src_, const In& w_, const Out& indices, const Out& weights,
                 int threads) {
    const int64_t* bs = data_as<const int64_t>(bucket_start, "bucket_start");
    const int64_t* bd = data_as<const int64_t>(bucket_dest, "bucket_dest");
    const int64_t* bk = data_as<const int64_t>(bucket_kept, "bucket_kept");
    const int64_t nbuckets = static_cast<int64_t>(bucket_kept.size());
    if (static_cast<int64_t>(bucket_start.size()) < nbuckets ||
        static_cast<int64_t>(bucket_dest.size()) < nbuckets)
        bad_array("bucket_start", "must have an entry per bucket");
    const int32_t* src = data_as<const int32_t>(src_, "src");
    const double* w = data_as<const double>(w_, "w");
    int32_t* ind = data_as<int32_t>(indices, "indices");
    const bool weighted = weights.size() > 0;
    double* wo = data_as<double>(weights, "weights");
    for (int64_t b = 0; b < nbuckets; ++b)
        if (bk[b] < 0 || bs[b] < 0 || bd[b] < 0 ||
            static_cast<size_t>(bs[b] + bk[b]) > src_.size() ||
            static_cast<size_t>(bd[b] + bk[b]) > indices.size() ||
            (weighted && (static_cast<size_t>(bs[b] + bk[b]) > w_.size() ||
                          static_cast<size_t>(bd[b] + bk[b]) > weights.size())))
            throw nb::value_error(("bucket " + std::to_string(b) +
                                   " lies outside the arrays").c_str());
    const int nt = threads_or_default(threads);
    nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t b = 0; b < nbuckets; ++b) {
        std::memmove(ind + bd[b], src + bs[b], static_cast<size_t>(bk[b]) * sizeof(int32_t));
        if (weighted)
            std::memmove(wo + bd[b], w + bs[b], static_cast<size_t>(bk[b]) * sizeof(double));
    }
}

void count_sources(const In& idx, const Out& hist, int threads) {
    if (hist.ndim() != 2) bad_array("hist", "must be 2-D");
    const int64_t groups = static_cast<int64_t>(hist.shape(0));
    const int64_t width = static_cast<int64_t>(hist.shape(1));
    const int64_t m = static_cast<int64_t>(idx.size());
    const int64_t step = groups > 0 ? (m + groups - 1) / groups : 0;
    const int nt = threads_or_default(threads);
    with_index(idx, "idx", [&](auto* ip) {
        with_index(hist, "hist", [&](auto* hp_c) {
            using H = elem_t<decltype(hp_c)>;
            H* hp = const_cast<H*>(hp_c);
            nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(static, 1) num_threads(nt)
            for (int64_t g = 0; g < groups; ++g) {
                H* h = hp + g * width;
                const int64_t end = std::min(m, (g + 1) * step);
                for (int64_t k = g * step; k < end; ++k) ++h[ip[k]];
            }
        });
    });
}

// The transpose of a CSR over n rows and n columns (an in-link CSR's out-link CSR):
// out_indptr (n + 1 entries) and out_cols (one per entry). A counting sort that visits
// the rows in order, so the rows of each output row come out ascending. O(n + m).
void transpose_csr(const In& indptr, const In& indices, const Out& out_indptr,
                   const Out& out_cols) {
    const int64_t n = static_cast<int64_t>(checked_size(indptr, "indptr")) - 1;
    if (n < 0) bad_array("indptr", "must hold n + 1 entries");
    if (static_cast<int64_t>(checked_size(out_indptr, "out_indptr")) != n + 1)
        bad_array("out_indptr", "must hold n + 1 entries");
    if (checked_size(out_cols, "out_cols") != checked_size(indices, "indices"))
        bad_array("out_cols", "must hold one entry per entry of indices");
    with_index(indptr, "indptr", [&](auto* ip) {
        with_index(indices, "indices", [&](auto* ix) {
            with_index(out_indptr, "out_indptr", [&](auto* op_c) {
                with_index(out_cols, "out_cols", [&](auto* oc_c) {
                    using P = elem_t<decltype(op_c)>;
                    using C = elem_t<decltype(oc_c)>;
                    P* op = const_cast<P*>(op_c);
                    C* oc = const_cast<C*>(oc_c);
                    nb::gil_scoped_release unlocked;
                    std::fill(op, op + n + 1, P(0));
                    const int64_t m = static_cast<int64_t>(ip[n]);
                    for (int64_t k = 0; k < m; ++k) {
                        const int64_t j = static_cast<int64_t>(ix[k]);
                        if (j < 0 || j >= n) throw std::out_of_range("index out of range");
                        ++op[j + 1];
                    }
                    for (int64_t j = 0; j < n; ++j) op[j + 1] += op[j];
                    std::vector<int64_t> next(op, op + n);
                    for (int64_t i = 0; i < n; ++i)
                        for (int64_t k = ip[i]; k < static_cast<int64_t>(ip[i + 1]); ++k)
                            oc[next[static_cast<int64_t>(ix[k])]++] = static_cast<C>(i);
                });
            });
        });
    });
}

// One write per page of a new array, on all threads and without the GIL: its pages are
// faulted in (the kernel maps and zeroes them) before a copy writes it, so that the copy
// runs at memory speed; a caller's other threads (a GPU solve's launches) keep running.
void touch_pages(const Out& a, int threads) {
    auto* p = static_cast<unsigned char*>(a.data());
    const int64_t bytes = static_cast<int64_t>(a.nbytes());
    const int64_t page = 4096;
    const int nt = threads_or_default(threads);
    nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t off = 0; off < bytes; off += page) p[off] = 0;
}

// memcpy with non-temporal stores where the CPU has them: the destination's lines are
// written without being read first (a third less memory traffic than memcpy's stores
// for blocks below its own streaming threshold), and the copy does not evict the cache.
inline void copy_streaming(unsigned char* d, const unsigned char* s, int64_t bytes) {
#if defined(__SSE2__)
    int64_t head = static_cast<int64_t>((16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15);
    if (head > bytes) head = bytes;
    std::memcpy(d, s, static_cast<size_t>(head));
    int64_t k = head;
    for (; k + 64 <= bytes; k += 64) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k + 16));
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k + 32));
        const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k + 48));
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + k), a);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + k + 16), b);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + k + 32), c);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + k + 48), e);
    }
    std::memcpy(d + k, s + k, static_cast<size_t>(bytes - k));
    _mm_sfence();
#else
    std::memcpy(d, s, static_cast<size_t>(bytes));
#endif
}

// Arrays laid end to end into dst on all threads, without the GIL: a parallel reader's
// chunks (a few hundred KiB each) packed into a page-locked staging slice. The work is cut
// into blocks across all pieces, so many small pieces keep every thread busy as one large
// one does (copy_bytes on each piece in turn used two threads of sixteen).
void copy_pieces(const Out& dst, const std::vector<In>& pieces, int threads, bool streaming) {
    checked_size(dst, "dst");
    struct Block {
        const unsigned char* s;
        unsigned char* d;
        int64_t size;
    };
    const int64_t block = int64_t(1) << 18;
    auto* d = static_cast<unsigned char*>(dst.data());
    std::vector<Block> blocks;
    int64_t at = 0;
    for (const auto& piece : pieces) {
        checked_size(piece, "pieces");
        const auto* s = static_cast<const unsigned char*>(piece.data());
        const int64_t bytes = static_cast<int64_t>(piece.nbytes());
        if (at + bytes > static_cast<int64_t>(dst.nbytes()))
            bad_array("dst", "must have as many bytes as the pieces together");
        for (int64_t off = 0; off < bytes; off += block)
            blocks.push_back({s + off, d + at + off, std::min(block, bytes - off)});
        at += bytes;
    }
    if (at != static_cast<int64_t>(dst.nbytes()))
        bad_array("dst", "must have as many bytes as the pieces together");
    const int nt = threads_or_default(threads);
    const auto count = static_cast<int64_t>(blocks.size());
    nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t k = 0; k < count; ++k) {
        const Block& b = blocks[static_cast<size_t>(k)];
        if (streaming)
            copy_streaming(b.d, b.s, b.size);
        else
            std::memcpy(b.d, b.s, static_cast<size_t>(b.size));
    }
}

// A memcpy on all threads, without the GIL: a vector moved from a page-locked staging
// buffer into its (already faulted) destination runs at the memory's speed, not one
// core's, while the GPU copies the next slice into the other buffer. One piece of
// copy_pieces.
void copy_bytes(const Out& dst, const In& src, int threads, bool streaming) {
    checked_size(dst, "dst");
    checked_size(src, "src");
    if (dst.nbytes() != src.nbytes()) bad_array("dst", "must have as many bytes as src");
    copy_pieces(dst, std::vector<In>{src}, threads, streaming);
}

}  // namespace

void register_build(nb::module_& m) {
    using namespace nb::literals;
    m.def("id_bounds", &id_bounds, "src"_a, "dst"_a, "starts"_a, "counts"_a, "lo"_a, "hi"_a,
          "threads"_a = 0);
    m.def("mark_and_count", &mark_and_count, "src"_a, "dst"_a, "starts"_a, "counts"_a,
          "present"_a, "shift"_a, "fine"_a, "src_ends"_a, "threads"_a = 0);
    m.def("sum_rows", &sum_rows, "counts"_a, "node_ids"_a, "out"_a, "threads"_a = 0);
    m.def("scatter", &scatter, "src"_a, "dst"_a, "w"_a, "starts"_a, "counts"_a, "newid"_a,
          "shift"_a, "coarse_of"_a, "cursor"_a, "keys"_a, "out_w"_a, "out_links"_a,
          "edge_runs"_a, "threads"_a = 0);
    m.def("sort_buckets", &sort_buckets, "bucket_start"_a, "id_start"_a, "keys"_a, "w_in"_a,
          "newid"_a, "indices"_a, "w"_a, "row_kept"_a, "bucket_kept"_a, "mode"_a,
          "count_weights"_a, "threads"_a = 0);
    m.def("gather_rows", &gather_rows, "bucket_start"_a, "bucket_dest"_a, "bucket_kept"_a,
          "src"_a, "w"_a, "indices"_a, "weights"_a, "threads"_a = 0);
    m.def("count_sources", &count_sources, "idx"_a, "hist"_a, "threads"_a = 0);
    m.def("transpose_csr", &transpose_csr, "indptr"_a, "indices"_a, "out_indptr"_a,
          "out_cols"_a);
    m.def("touch_pages", &touch_pages, "a"_a, "threads"_a = 0);
    m.def("copy_bytes", &copy_bytes, "dst"_a, "src"_a, "threads"_a = 0, "streaming"_a = true);
    m.def("copy_pieces", &copy_pieces, "dst"_a, "pieces"_a, "threads"_a = 0,
          "streaming"_a = true);
}

}  // namespace webrank
