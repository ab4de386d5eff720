// Ballistic — the SIMD kernels for AVX2 with FMA. Built with this instruction set's flags
// (engine/CMakeLists.txt); toi_simd.cpp calls them only on CPUs that have it.
#include "kernels/toi_simd_impl.hpp"

namespace ballistic::detail {

template struct SimdImpl<xsimd::fma3<xsimd::avx2>>;

namespace {
constexpr SimdTable kTable = make_simd_table<xsimd::fma3<xsimd::avx2>>();
}

const SimdTable& simd_table_fma3_avx2() { return kTable; }

}  // namespace ballistic::detail
