// Shared helpers of webrank's compiled CPU kernels (the extension webrank.kernels._cpu).
//
// Every kernel takes NumPy arrays of any of the dtypes its Python caller may hold and
// dispatches on them once, at the call, to a template instantiated for that combination:
// the hot loops see plain typed pointers. Arrays are taken as they are (no conversion,
// so an output is never written into a silent copy); a wrong dtype or a non-contiguous
// array is a TypeError naming the argument.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <utility>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace webrank {

namespace nb = nanobind;

// An array the kernel reads: any array on the host, read-only ones included (pyarrow's
// zero-copy columns, memory maps), taken without conversion.
using In = nb::ndarray<nb::ro, nb::device::cpu>;
// An array the kernel writes: writable, taken without conversion (a converted copy would
// take the writes).
using Out = nb::ndarray<nb::device::cpu>;

enum class Kind { i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, other };

template <class A>
inline Kind kind_of(const A& a) {
    const nb::dlpack::dtype t = a.dtype();
    if (t.lanes != 1) return Kind::other;
    const auto code = static_cast<nb::dlpack::dtype_code>(t.code);
    if (code == nb::dlpack::dtype_code::Int) {
        switch (t.bits) {
            case 8: return Kind::i8;
            case 16: return Kind::i16;
            case 32: return Kind::i32;
            case 64: return Kind::i64;
        }
    } else if (code == nb::dlpack::dtype_code::UInt) {
        switch (t.bits) {
            case 8: return Kind::u8;
            case 16: return Kind::u16;
            case 32: return Kind::u32;
            case 64: return Kind::u64;
        }
    } else if (code == nb::dlpack::dtype_code::Float) {
        switch (t.bits) {
            case 32: return Kind::f32;
            case 64: return Kind::f64;
        }
    } else if (code == nb::dlpack::dtype_code::Bool) {
        return Kind::u8;  // NumPy's bool is one byte holding 0 or 1
    }
    return Kind::other;
}

[[noreturn]] inline void bad_array(const char* name, const char* what) {
    throw nb::type_error((std::string("webrank kernel argument '") + name + "': " + what).c_str());
}

// The array's element count, after checking it is C-contiguous (any shape).
template <class A>
inline size_t checked_size(const A& a, const char* name) {
    if (a.size() == 0) return 0;  // an empty array's strides are arbitrary
    size_t expect = 1;
    for (size_t d = a.ndim(); d-- > 0;) {
        if (a.shape(d) != 1 && a.stride(d) != static_cast<int64_t>(expect))
            bad_array(name, "must be C-contiguous");
        expect *= a.shape(d);
    }
    return a.size();
}

// A typed pointer to the array's data, after checking dtype and layout (const T for an
// array read, T for one written).
template <class T, class A>
inline T* data_as(const A& a, const char* name) {
    static_assert(std::is_const_v<T> || std::is_same_v<A, Out>,
                  "a kernel writes only arrays taken as Out");
    checked_size(a, name);
    const nb::dlpack::dtype want = nb::dtype<T>();
    const nb::dlpack::dtype got = a.dtype();
    if (got.code != want.code || got.bits != want.bits || got.lanes != 1)
        bad_array(name, "has the wrong dtype");
    return static_cast<T*>(const_cast<void*>(static_cast<const void*>(a.data())));
}

// Calls f with a typed pointer to an integer array (int32 or int64).
template <class A, class F>
inline decltype(auto) with_index(const A& a, const char* name, F&& f) {
    checked_size(a, name);
    switch (kind_of(a)) {
        case Kind::i32: return f(static_cast<const int32_t*>(a.data()));
        case Kind::i64: return f(static_cast<const int64_t*>(a.data()));
        default: bad_array(name, "must be int32 or int64");
    }
}

// Calls f with a typed pointer to a float array (float32 or float64).
template <class A, class F>
inline decltype(auto) with_float(const A& a, const char* name, F&& f) {
    checked_size(a, name);
    switch (kind_of(a)) {
        case Kind::f32: return f(static_cast<const float*>(a.data()));
        case Kind::f64: return f(static_cast<const double*>(a.data()));
        default: bad_array(name, "must be float32 or float64");
    }
}

// Per-link values of an unweighted graph: every link counts 1 (the products fold away).
struct Ones {
    constexpr double operator[](int64_t) const { return 1.0; }
};

// Calls f with a typed pointer to a weighted graph's per-link values (float32 or float64),
// or with Ones{} where the array is empty (an unweighted graph).
template <class A, class F>
inline decltype(auto) with_vals(const A& a, const char* name, F&& f) {
    if (checked_size(a, name) == 0) return f(Ones{});
    return with_float(a, name, std::forward<F>(f));
}

// Threads for a parallel loop: the caller's count, or OpenMP's default (the CPUs this
// process may run on) for 0.
inline int threads_or_default(int threads) {
#ifdef _OPENMP
    return threads > 0 ? threads : omp_get_max_threads();
#else
    (void)threads;
    return 1;
#endif
}

}  // namespace webrank
