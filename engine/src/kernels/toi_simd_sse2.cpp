// Ballistic — the SIMD kernels for SSE2, the x86-64 baseline. Built with this instruction set's flags
// (engine/CMakeLists.txt); toi_simd.cpp calls them only on CPUs that have it.
#include "kernels/toi_simd_impl.hpp"

namespace ballistic::detail {

template struct SimdImpl<xsimd::sse2>;

namespace {
constexpr SimdTable kTable = make_simd_table<xsimd::sse2>();
}

const SimdTable& simd_table_sse2() { return kTable; }

}  // namespace ballistic::detail
