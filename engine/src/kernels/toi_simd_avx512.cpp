// Ballistic — the SIMD kernels for AVX-512 (F, CD, BW, DQ, VL; with AVX2 and FMA). Built with this instruction set's flags
// (engine/CMakeLists.txt); toi_simd.cpp calls them only on CPUs that have it.
// GCC 12 warns inside its own _mm512_undefined_pd() once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/toi_simd_impl.hpp"

namespace ballistic::detail {

template struct SimdImpl<xsimd::avx512bw>;

namespace {
constexpr SimdTable kTable = make_simd_table<xsimd::avx512bw>();
}

const SimdTable& simd_table_avx512bw() { return kTable; }

}  // namespace ballistic::detail
