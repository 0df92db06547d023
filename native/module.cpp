// webrank.kernels._cpu: the compiled CPU kernels, built with the package (no compiler runs
// on a user's call). Each source file registers its kernels; the Python modules
// webrank.kernels.cpu_* wrap them with docstrings and checks.
#include "common.hpp"

namespace webrank {
void register_power(nb::module_& m);
void register_build(nb::module_& m);
void register_parse(nb::module_& m);
void register_sweep(nb::module_& m);
void register_solver_steps(nb::module_& m);
void register_fixed(nb::module_& m);
void register_frontier(nb::module_& m);
void register_bvgraph(nb::module_& m);
void register_metrics(nb::module_& m);
}  // namespace webrank

NB_MODULE(_cpu, m) {
    m.doc() = "webrank's compiled CPU kernels (C++ with OpenMP)";
    m.def("openmp", []() {
#ifdef _OPENMP
        return true;
#else
        return false;
#endif
    }, "Whether the kernels were built with OpenMP (parallel loops).");
    m.def("max_threads", []() { return webrank::threads_or_default(0); },
          "OpenMP's default thread count in this process.");
    webrank::register_power(m);
    webrank::register_build(m);
    webrank::register_parse(m);
    webrank::register_sweep(m);
    webrank::register_solver_steps(m);
    webrank::register_fixed(m);
    webrank::register_frontier(m);
    webrank::register_bvgraph(m);
    webrank::register_metrics(m);
}
