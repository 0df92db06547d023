// The kernel of the parallel edge-list parse: ranges of a plain file's bytes (each
// starting at a line start) parsed in parallel into two id columns (int32 or int64: the
// caller's; an id past int32's range still counts in each range's bounds, so the caller
// sees it and parses again into int64), in the canonical form `digits DELIM digits` and
// a line end only. Python side:
// webrank.kernels.cpu_parse (what the canonical form is, and why, in its docstrings).
#include "common.hpp"

#include <algorithm>
#include <cstdint>

namespace webrank {
namespace {

// The file's bytes come read-only (a memory map).

constexpr int MAX_DIGITS = 18;  // below 10**18 < 2**63: no overflow check per digit

// The decimal number at buf[p:end]: its value (meaningful for up to MAX_DIGITS digits),
// its digit count, and p moved after it. Unsigned: a longer run wraps (and is refused)
// rather than overflowing a signed integer.
inline int64_t number(const uint8_t* buf, int64_t& p, int64_t end, int& digits) {
    uint64_t v = 0;
    int nd = 0;
    for (; p < end; ++p) {
        const uint8_t c = buf[p];
        if (c < '0' || c > '9') break;
        v = v * 10 + (c - '0');
        if (nd <= MAX_DIGITS) ++nd;  // (counts no further than "too many")
    }
    digits = nd;
    return static_cast<int64_t>(v);
}

template <class T>
void parse_into(const In& buf_, const In& cuts_, int delim, const In& first_slot_,
                const Out& src_, const Out& dst_, const Out& parsed_, const Out& bounds_,
                int threads) {
    const uint8_t* buf = data_as<const uint8_t>(buf_, "buf");
    const int64_t size = static_cast<int64_t>(buf_.size());
    const int64_t* cuts = data_as<const int64_t>(cuts_, "cuts");
    const int64_t ranges = static_cast<int64_t>(cuts_.size()) - 1;
    if (ranges < 0) bad_array("cuts", "must not be empty");
    const int64_t* first = data_as<const int64_t>(first_slot_, "first_slot");
    T* src = data_as<T>(src_, "src");
    T* dst = data_as<T>(dst_, "dst");
    int64_t* parsed = data_as<int64_t>(parsed_, "parsed");
    int64_t* bounds = data_as<int64_t>(bounds_, "bounds");
    if (static_cast<int64_t>(first_slot_.size()) < ranges ||
        static_cast<int64_t>(parsed_.size()) < ranges ||
        static_cast<int64_t>(bounds_.size()) < 2 * ranges)
        bad_array("first_slot", "parsed and bounds need an entry per range");
    for (int64_t r = 0; r < ranges; ++r)
        if (cuts[r] < 0 || cuts[r] > cuts[r + 1] || cuts[r + 1] > size || first[r] < 0)
            bad_array("cuts", "must be increasing offsets into buf");
    // a range whose lines would run past the columns stops there, as at a bad byte (the
    // caller's slots allow a line per 4 bytes, so only a wrong caller gets here)
    const int64_t slots = static_cast<int64_t>(std::min(src_.size(), dst_.size()));
    const int nt = threads_or_default(threads);
    nb::gil_scoped_release unlocked;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t r = 0; r < ranges; ++r) {
        int64_t p = cuts[r];
        const int64_t end = cuts[r + 1];
        int64_t o = first[r];
        int64_t lo = int64_t(1) << 62, hi = -1, bad = -1;
        int nd;
        while (p < end) {
            if (o >= slots) {
                bad = p;
                break;
            }
            const int64_t a = number(buf, p, end, nd);
            if (nd == 0 || nd > MAX_DIGITS || p >= end || buf[p] != delim) {
                bad = p;
                break;
            }
            ++p;
            const int64_t b = number(buf, p, end, nd);
            if (nd == 0 || nd > MAX_DIGITS) {
                bad = p;
                break;
            }
            if (p < end && buf[p] == '\r') ++p;  // \r\n
            if (p < end) {
                if (buf[p] != '\n') {
                    bad = p;
                    break;
                }
                ++p;
            }
            src[o] = static_cast<T>(a);
            dst[o] = static_cast<T>(b);
            ++o;
            lo = std::min(lo, std::min(a, b));
            hi = std::max(hi, std::max(a, b));
        }
        parsed[r] = bad < 0 ? o - first[r] : -1 - bad;
        bounds[2 * r] = lo;
        bounds[2 * r + 1] = hi;
    }
}

void parse_id_pairs(const In& buf, const In& cuts, int delim, const In& first_slot,
                    const Out& src, const Out& dst, const Out& parsed, const Out& bounds,
                    int threads) {
    if (src.dtype() == nb::dtype<int32_t>())
        parse_into<int32_t>(buf, cuts, delim, first_slot, src, dst, parsed, bounds, threads);
    else
        parse_into<int64_t>(buf, cuts, delim, first_slot, src, dst, parsed, bounds, threads);
}

}  // namespace

void register_parse(nb::module_& m) {
    using namespace nb::literals;
    m.def("parse_id_pairs", &parse_id_pairs, "buf"_a, "cuts"_a, "delim"_a, "first_slot"_a,
          "src"_a, "dst"_a, "parsed"_a, "bounds"_a, "threads"_a = 0);
}

}  // namespace webrank
