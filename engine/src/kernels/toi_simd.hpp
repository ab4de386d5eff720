// Ballistic — SIMD versions of the batch kernels, with one runtime choice of instruction set.
//
// Every kernel here gives the same bits as its scalar reference in toi.hpp: the lanes run the
// very operation sequence of the scalar code (IEEE add, sub, mul, div, sqrt; no FMA contraction,
// no reordered sums), so prediction does not depend on which CPU runs it. Quartic lanes run the
// scalar solver's root isolation and refinement with masks (on SSE2, where two lanes gain
// nothing, they are handed to the scalar solver one by one). tests/test_simd.cpp compares every
// kernel with its reference for every instruction set this CPU offers.
//
// The implementation (toi_simd_impl.hpp, xsimd) is compiled once per instruction set in its own
// translation unit (toi_simd_avx512.cpp, toi_simd_avx2.cpp, toi_simd_sse2.cpp); toi_simd.cpp picks
// the best one the CPU and the OS support, once. Where none is built (another CPU than x86-64, or
// BALLISTIC_SIMD off) it picks the portable table, the scalar references one lane at a time
// (toi_simd_portable.cpp). This header does not include xsimd.
//
// All lane spans of one call must be at least as long as the output (or the `end` index).
#pragma once

#include "kernels/toi.hpp"

#include <ballistic/vec3.hpp>

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace ballistic::detail {

// Gaps p0 + p1 τ + p2 τ² + p3 τ³ + p4 τ⁴, one per lane (the first_closing_polynomial() calls).
struct PolynomialLanes {
    std::span<const double> p0, p1, p2, p3, p4;
};

// Spheres (centres and radii) tested against one ray.
struct SphereLanes {
    std::span<const double> cx, cy, cz;
    std::span<const double> radius;
};

// Ball state along p + v τ + ½ a τ², τ = T − t (the SoA arrays of Balls), and the columns its
// position and velocity at T go to.
struct MotionLanes {
    std::span<const double> x, y, z;
    std::span<const double> vx, vy, vz;
    std::span<const double> ax, ay, az;
    std::span<const double> t;
    std::span<double> to_x, to_y, to_z;
    std::span<double> to_vx, to_vy, to_vz;
};

struct SimdTable;  // one instruction set's entry points (toi_simd_impl.hpp)

// The kernels of one instruction set.
class SimdKernels {
public:
    explicit SimdKernels(const SimdTable& table) : table_(&table) {}

    std::string_view name() const;  // xsimd's arch name ("avx512bw", "fma3+avx2", "sse2") or "portable"
    std::size_t width() const;      // doubles per register

    // toi_ball_ball_batch(): the quadratic (da = 0) or the quartic, as polynomial().
    void ball_ball(const PairLanes& lanes, double horizon, std::span<double> out) const;
    // toi_neighbours_batch(): gathers each lane's ball from the columns, then as ball_ball().
    void neighbours(const Mover& self, const NeighbourLanes& lanes, double horizon, std::span<double> out) const;
    // first_closing_polynomial() per lane: quadratics and (except with SSE2) quartics in SIMD;
    // a cubic (a leading coefficient that underflowed to zero) through the scalar solver. The
    // solver ball_ball() and neighbours() share; tests and benchmarks call it on its own.
    void polynomial(const PolynomialLanes& lanes, double horizon, std::span<double> out) const;
    // ray_sphere() per lane: entry distance along origin + s·direction, 0 when the origin is
    // inside the sphere, −1 for a miss.
    void ray_sphere(Vec3 origin, Vec3 direction, const SphereLanes& lanes, std::span<double> out) const;
    // Position and velocity at T of the balls in [begin, end), the bits Balls::advance(s, T) would
    // store (a ball already at T: its own), written to the `to` columns; the balls stay as they are.
    void state_at(const MotionLanes& lanes, double T, std::size_t begin, std::size_t end) const;

private:
    const SimdTable* table_;
};

// The best kernels for this CPU (chosen on first use; thread-safe).
const SimdKernels& simd_kernels();
// Every instruction set built in and usable on this CPU, best first (tests and benchmarks).
std::vector<SimdKernels> simd_kernels_available();
// The kernels of one instruction set by name, or nullptr when this CPU cannot run them.
const SimdKernels* simd_kernels_for(std::string_view name);

inline void toi_ball_ball_batch_simd(const PairLanes& lanes, double horizon, std::span<double> out) {
    simd_kernels().ball_ball(lanes, horizon, out);
}
inline void toi_neighbours_batch_simd(const Mover& self, const NeighbourLanes& lanes, double horizon,
                                      std::span<double> out) {
    simd_kernels().neighbours(self, lanes, horizon, out);
}
inline void ray_sphere_batch_simd(Vec3 origin, Vec3 direction, const SphereLanes& lanes,
                                  std::span<double> out) {
    simd_kernels().ray_sphere(origin, direction, lanes, out);
}
inline void state_at_batch_simd(const MotionLanes& lanes, double T, std::size_t begin, std::size_t end) {
    simd_kernels().state_at(lanes, T, begin, end);
}

}  // namespace ballistic::detail
