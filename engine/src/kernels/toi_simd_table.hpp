// Ballistic — the table of one instruction set's kernel entry points, and the plain pointer
// structs they take. Shared by the xsimd implementation (toi_simd_impl.hpp), the portable table
// (toi_simd_portable.cpp) and the dispatch (toi_simd.cpp); it does not include xsimd.
#pragma once

#include <ballistic/vec3.hpp>

#include <cstddef>
#include <cstdint>

namespace ballistic::detail {

// Plain pointers at the boundary to the per-arch translation units. Code compiled there with
// -mavx512… must not instantiate templates that baseline code also instantiates (std::span,
// std::min, Vec3 helpers): the linker keeps one copy of each, possibly the AVX-512 one.
struct PairPointers {
    const double *dpx, *dpy, *dpz, *dvx, *dvy, *dvz, *dax, *day, *daz, *sigma;
};
struct PolynomialPointers {
    const double *p0, *p1, *p2, *p3, *p4;
};
struct SpherePointers {
    const double *cx, *cy, *cz, *radius;
};
struct NeighbourPointers {
    const double *x, *y, *z, *vx, *vy, *vz, *t, *radius;
    const std::uint32_t* slot;
    const double *sx, *sy, *sz;  // null: no image shifts
};
struct MoverState {  // Mover without Vec3
    double px, py, pz, vx, vy, vz, ax, ay, az, r, now;
};
struct MotionPointers {
    const double *x, *y, *z, *vx, *vy, *vz;
    const double *ax, *ay, *az;
    const double* t;
    double *to_x, *to_y, *to_z, *to_vx, *to_vy, *to_vz;
};

struct SimdTable {
    const char* name;
    std::size_t width;
    void (*ball_ball)(const PairPointers&, std::size_t n, double horizon, double* out);
    void (*neighbours)(const MoverState&, const NeighbourPointers&, std::size_t n, double horizon, double* out);
    void (*polynomial)(const PolynomialPointers&, std::size_t n, double horizon, double* out);
    void (*ray_sphere)(Vec3 origin, Vec3 direction, const SpherePointers&, std::size_t n, double* out);
    void (*state_at)(const MotionPointers&, double T, std::size_t begin, std::size_t end);
};

// Defined by toi_simd_avx512.cpp, toi_simd_avx2.cpp and toi_simd_sse2.cpp (x86-64 builds with
// BALLISTIC_SIMD on) and by toi_simd_portable.cpp (every build).
const SimdTable& simd_table_avx512bw();
const SimdTable& simd_table_fma3_avx2();
const SimdTable& simd_table_sse2();
const SimdTable& simd_table_portable();

}  // namespace ballistic::detail
