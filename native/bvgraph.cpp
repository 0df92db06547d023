// The decoder of LAW WebGraph BVGraph bit streams: one sequential pass over the successor
// lists of every node. Python side: webrank.io.bvgraph (the format, the codes and the
// error codes are described in its docstring).
//
// The stream is the file's bytes followed by 8 zero bytes (`nbytes` bytes in all, `nbits`
// bits of data); a position is a bit index, bits are read most-significant first. Reading
// past the data yields zeros and never touches memory outside the buffer; the decoder
// notices by comparing the position with nbits. Values are int64 as in the format's
// description; a code too long for one (corrupt data) reads as INVALID, which every range
// check rejects, so no arithmetic below overflows.
#include "common.hpp"

#include <cstdint>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

namespace webrank {
namespace {

// Coding identifiers, as in it.unimi.dsi.webgraph.CompressionFlags.
constexpr int DELTA = 1, GAMMA = 2, UNARY = 5, ZETA = 6, NIBBLE = 7;  // else GOLOMB

constexpr int64_t INVALID = int64_t{1} << 62;

// Error codes, as webrank.io.bvgraph names them.
enum Error : int64_t {
    OK = 0,
    TOO_MANY_ARCS = 1,
    BAD_REFERENCE = 2,
    BAD_BLOCKS = 3,
    BAD_INTERVALS = 4,
    OUT_OF_RANGE = 5,
    NOT_INCREASING = 6,
    TOO_FEW_ARCS = 7,
    TRUNCATED = 8,
};

inline int clz64(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return x == 0 ? 64 : __builtin_clzll(x);
#else
    int n = 0;
    for (uint64_t bit = uint64_t{1} << 63; bit && !(x & bit); bit >>= 1) ++n;
    return n;
#endif
}

// The 8 bytes at p as a big-endian integer.
inline uint64_t load_be64(const uint8_t* p) {
#if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    std::memcpy(&w, p, 8);
    return __builtin_bswap64(w);
#else
    uint64_t w = 0;
    for (int i = 0; i < 8; ++i) w = (w << 8) | p[i];
    return w;
#endif
}

struct Reader {
    const uint8_t* buf;
    int64_t nbytes;
    int64_t nbits;
    int64_t pos = 0;

    // The 56 bits from byte pos >> 3, bits before pos cleared (so 56 - (pos & 7) >= 49
    // are valid), and pos & 7.
    inline std::pair<int64_t, int> window() const {
        const int64_t b = pos >> 3;
        const int s = static_cast<int>(pos & 7);
        uint64_t w = 0;
        // past the data and its zero padding, only zeros are left
        if (b + 8 <= nbytes) w = load_be64(buf + b) >> 8;
        w &= (uint64_t{1} << (56 - s)) - 1;
        return {static_cast<int64_t>(w), s};
    }

    // An n-bit unsigned integer, 0 <= n <= 62.
    int64_t bits(int64_t n) {
        int64_t v = 0;
        while (n > 0) {
            const int64_t c = n <= 48 ? n : 48;
            const auto [w, s] = window();
            v = (v << c) | (w >> (56 - s - c));
            pos += c;
            n -= c;
        }
        return v;
    }

    // Zeros before the next one (stops, returning a huge count, past the end).
    int64_t unary() {
        int64_t x = 0;
        for (;;) {
            const auto [w, s] = window();
            if (w != 0) {
                const int64_t z = clz64(static_cast<uint64_t>(w)) - 8 - s;
                pos += z + 1;
                return x + z;
            }
            x += 56 - s;
            pos += 56 - s;
            if (pos > nbits + 64) return x;
        }
    }

    int64_t gamma() {
        const auto [w, s] = window();
        if (w != 0) {  // the whole code in the window: the common case
            const int64_t z = clz64(static_cast<uint64_t>(w)) - 8 - s;
            const int64_t ln = 2 * z + 1;
            if (ln <= 56 - s) {
                pos += ln;
                return (w >> (56 - s - ln)) - 1;
            }
        }
        const int64_t msb = unary();
        if (msb > 62) {
            pos += 62;
            return INVALID;
        }
        const int64_t v = bits(msb);
        return ((int64_t{1} << msb) | v) - 1;
    }

    int64_t delta() {
        const int64_t msb = gamma();
        if (msb > 62) {
            pos += 62;
            return INVALID;
        }
        const int64_t v = bits(msb);
        return ((int64_t{1} << msb) | v) - 1;
    }

    int64_t zeta(int64_t k) {
        const int64_t h = unary();
        // k > 62 makes every code too long (and h * k could overflow)
        if (h > 62 || k > 62 || h * k + k - 1 > 61) {
            pos += 62;
            return INVALID;
        }
        const int64_t left = int64_t{1} << (h * k);
        const int64_t m = bits(h * k + k - 1);
        if (m < left) return m + left - 1;
        const int64_t b = bits(1);
        return (m << 1) + b - 1;
    }

    int64_t nibble() {
        int64_t x = 0;
        for (int i = 0; i < 21; ++i) {
            const int64_t w = bits(4);
            x = (x << 3) | (w & 7);
            if (w >= 8) return x;
        }
        return INVALID;
    }

    int64_t golomb(int64_t b) {
        if (b == 0) return 0;
        const int64_t q = unary();
        if (q > (int64_t{1} << 61) / b) return INVALID;
        // minimal binary code of the remainder, 0 <= r < b
        const int log2b = 63 - clz64(static_cast<uint64_t>(b));
        // 2**(log2b + 1) - b in uint64: it wraps, as the int64 arithmetic it stands for,
        // where b >= 2**62
        const int64_t m = static_cast<int64_t>((uint64_t{1} << (log2b + 1)) -
                                               static_cast<uint64_t>(b));
        int64_t x = bits(log2b);
        if (x >= m) x = (x << 1) + bits(1) - m;
        return q * b + x;
    }

    int64_t code(int code, int64_t k) {
        switch (code) {
            case GAMMA: return gamma();
            case ZETA: return zeta(k);
            case UNARY: return unary();
            case DELTA: return delta();
            case NIBBLE: return nibble();
            default: return golomb(k);
        }
    }
};

inline int64_t nat2int(int64_t v) { return (v >> 1) ^ -(v & 1); }

using Result = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;

// Decodes every successor list into src/dst (m arcs) and start (n + 1 offsets); returns
// (error, node, value, arcs written, bit position), error OK on success.
Result decode(Reader& rd, int64_t n, int64_t m, int64_t window, int64_t minint, int64_t k,
              int out_code, int ref_code, int blkcnt_code, int blk_code, int res_code,
              int64_t* src, int64_t* dst, int64_t* start) {
    const int64_t nbits = rd.nbits;
    int64_t out = 0;
    int64_t cap = 64;
    std::vector<int64_t> s_copy(cap + 1), s_int(cap + 1), s_res(cap + 1);
    const int64_t big = int64_t{1} << 62;  // sentinel, larger than any node

    for (int64_t x = 0; x < n; ++x) {
        start[x] = out;
        const int64_t d = rd.code(out_code, k);
        if (rd.pos > nbits) return {TRUNCATED, x, 0, out, rd.pos};
        if (d == 0) continue;
        if (d > m - out) return {TOO_MANY_ARCS, x, d, out, rd.pos};
        if (d > cap) {
            cap = d > 2 * cap ? d : 2 * cap;
            s_copy.resize(cap + 1);
            s_int.resize(cap + 1);
            s_res.resize(cap + 1);
        }

        // ---- copied successors (reference + copy blocks)
        int64_t ncopy = 0;
        int64_t ref = 0;
        if (window > 0) {
            ref = rd.code(ref_code, k);
            if (ref > window || ref > x) return {BAD_REFERENCE, x, ref, out, rd.pos};
        }
        if (ref > 0) {
            const int64_t rs = start[x - ref];
            const int64_t re = start[x - ref + 1];
            const int64_t nblocks = rd.code(blkcnt_code, k);
            if (nblocks > re - rs + 1) return {BAD_BLOCKS, x, nblocks, out, rd.pos};
            int64_t idx = rs;
            bool copying = true;
            for (int64_t i = 0; i < nblocks; ++i) {
                int64_t bl = rd.code(blk_code, k);
                if (i > 0) bl += 1;
                if (bl > re - idx) return {BAD_BLOCKS, x, bl, out, rd.pos};
                if (copying) {
                    if (ncopy + bl > d) return {BAD_BLOCKS, x, bl, out, rd.pos};
                    std::memcpy(&s_copy[ncopy], dst + idx, sizeof(int64_t) * bl);
                    ncopy += bl;
                }
                idx += bl;
                copying = !copying;
            }
            if (copying) {  // even block count: the rest of the referenced list is copied
                const int64_t bl = re - idx;
                if (ncopy + bl > d) return {BAD_BLOCKS, x, bl, out, rd.pos};
                std::memcpy(&s_copy[ncopy], dst + idx, sizeof(int64_t) * bl);
                ncopy += bl;
            }
        }
        s_copy[ncopy] = big;
        const int64_t extra = d - ncopy;

        // ---- intervals
        int64_t nint = 0;
        if (extra > 0 && minint > 0) {
            const int64_t nintervals = rd.gamma();
            if (nintervals > 0) {
                if (nintervals > extra / minint) return {BAD_INTERVALS, x, nintervals, out, rd.pos};
                int64_t prev = 0;
                for (int64_t i = 0; i < nintervals; ++i) {
                    const int64_t v = rd.gamma();
                    const int64_t left = i == 0 ? x + nat2int(v) : prev + v + 1;
                    // ln <= INVALID, and minint <= extra < 2**62 here: no overflow
                    const int64_t ln = rd.gamma() + minint;
                    if (ln > extra - nint) return {BAD_INTERVALS, x, ln, out, rd.pos};
                    if (left < 0 || left > n - ln) return {OUT_OF_RANGE, x, left, out, rd.pos};
                    for (int64_t j = 0; j < ln; ++j) s_int[nint + j] = left + j;
                    nint += ln;
                    prev = left + ln;
                }
            }
        }
        s_int[nint] = big;

        // ---- residuals
        const int64_t nres = extra - nint;
        if (nres > 0) {
            int64_t r = x + nat2int(rd.code(res_code, k));
            if (r < 0 || r >= n) return {OUT_OF_RANGE, x, r, out, rd.pos};
            s_res[0] = r;
            for (int64_t i = 1; i < nres; ++i) {
                r += rd.code(res_code, k) + 1;
                if (r >= n) return {OUT_OF_RANGE, x, r, out, rd.pos};
                s_res[i] = r;
            }
        }
        s_res[nres] = big;

        // ---- merge the three increasing lists
        if (nint + nres == 0 || ncopy + nint == 0) {
            // a single list, increasing by construction
            const int64_t* only = nint + nres == 0 ? s_copy.data() : s_res.data();
            for (int64_t t = 0; t < d; ++t) {
                dst[out + t] = only[t];
                src[out + t] = x;
            }
            out += d;
            if (rd.pos > nbits) return {TRUNCATED, x, 0, out, rd.pos};
            continue;
        }
        int64_t i = 0, j = 0, q = 0, last = -1;
        for (int64_t t = 0; t < d; ++t) {
            const int64_t a = s_copy[i], b = s_int[j], c = s_res[q];
            int64_t val;
            if (a <= b && a <= c) {
                val = a;
                ++i;
            } else if (b <= c) {
                val = b;
                ++j;
            } else {
                val = c;
                ++q;
            }
            if (val <= last) return {NOT_INCREASING, x, val, out, rd.pos};
            last = val;
            dst[out + t] = val;
            src[out + t] = x;
        }
        out += d;
        if (rd.pos > nbits) return {TRUNCATED, x, 0, out, rd.pos};
    }

    start[n] = out;
    if (out != m) return {TOO_FEW_ARCS, n, out, out, rd.pos};
    return {OK, n, 0, out, rd.pos};
}

Result bvgraph_decode(const In& buf, int64_t nbits, int64_t n, int64_t m, int64_t window,
                      int64_t minint, int64_t k, int out_code, int ref_code, int blkcnt_code,
                      int blk_code, int res_code, const Out& src, const Out& dst,
                      const Out& start) {
    const uint8_t* bp = data_as<const uint8_t>(buf, "buf");
    int64_t* sp = data_as<int64_t>(src, "src");
    int64_t* dp = data_as<int64_t>(dst, "dst");
    int64_t* st = data_as<int64_t>(start, "start");
    const int64_t nbytes = static_cast<int64_t>(buf.size());
    if (n < 0 || m < 0 || nbits < 0 || nbits > 8 * (nbytes - 8))
        throw nb::value_error("bvgraph_decode: bad sizes");
    if (static_cast<int64_t>(src.size()) != m || static_cast<int64_t>(dst.size()) != m)
        bad_array("src", "src and dst must hold m arcs");
    if (static_cast<int64_t>(start.size()) != n + 1) bad_array("start", "must hold n + 1 entries");
    Reader rd{bp, nbytes, nbits};
    nb::gil_scoped_release unlocked;
    return decode(rd, n, m, window, minint, k, out_code, ref_code, blkcnt_code, blk_code,
                  res_code, sp, dp, st);
}

// Reads out.size() consecutive codes `code` from bit 0 of the stream into out; returns
// the bit position after them (the bit readers on their own, for tests).
int64_t bvgraph_read_codes(const In& buf, int64_t nbits, int code, int64_t k,
                           const Out& out) {
    const uint8_t* bp = data_as<const uint8_t>(buf, "buf");
    int64_t* o = data_as<int64_t>(out, "out");
    const int64_t nbytes = static_cast<int64_t>(buf.size());
    if (nbits < 0 || nbits > 8 * (nbytes - 8))
        throw nb::value_error("bvgraph_read_codes: buf must end with 8 zero bytes past nbits");
    Reader rd{bp, nbytes, nbits};
    for (size_t i = 0; i < out.size(); ++i) o[i] = rd.code(code, k);
    return rd.pos;
}

}  // namespace

void register_bvgraph(nb::module_& m) {
    using namespace nb::literals;
    m.def("bvgraph_decode", &bvgraph_decode, "buf"_a, "nbits"_a, "n"_a, "m"_a, "window"_a,
          "minint"_a, "k"_a, "out_code"_a, "ref_code"_a, "blkcnt_code"_a, "blk_code"_a,
          "res_code"_a, "src"_a, "dst"_a, "start"_a,
          "Decode every successor list of a BVGraph bit stream into src/dst/start; returns "
          "(error, node, value, arcs written, bit position).");
    m.def("bvgraph_read_codes", &bvgraph_read_codes, "buf"_a, "nbits"_a, "code"_a, "k"_a,
          "out"_a, "Read out.size consecutive codes from bit 0; returns the bit position.");
}

}  // namespace webrank
