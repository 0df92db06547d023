// Rank statistics of webrank.metrics: the discordant pairs of Kendall's tau.
#include "common.hpp"

#include <algorithm>
#include <vector>

namespace webrank {
namespace {

// Pairs i < j with a[i] > a[j] (strict inversions; equal values are no inversion), by a
// bottom-up merge sort of a copy: O(n log n) time, n extra int64.
int64_t count_inversions(const In& a) {
    const int64_t n = static_cast<int64_t>(checked_size(a, "a"));
    return with_index(a, "a", [&](auto* ap) -> int64_t {
        std::vector<int64_t> cur(ap, ap + n), next(static_cast<size_t>(n));
        nb::gil_scoped_release unlocked;
        int64_t inversions = 0;
        for (int64_t width = 1; width < n; width *= 2) {
            for (int64_t lo = 0; lo < n; lo += 2 * width) {
                const int64_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
                int64_t i = lo, j = mid, o = lo;
                while (i < mid && j < hi) {
                    if (cur[j] < cur[i]) {  // every left entry still waiting is larger
                        inversions += mid - i;
                        next[o++] = cur[j++];
                    } else {
                        next[o++] = cur[i++];
                    }
                }
                while (i < mid) next[o++] = cur[i++];
                while (j < hi) next[o++] = cur[j++];
            }
            cur.swap(next);
        }
        return inversions;
    });
}

}  // namespace

void register_metrics(nb::module_& m) {
    using namespace nb::literals;
    m.def("count_inversions", &count_inversions, "a"_a);
}

}  // namespace webrank
