// Ballistic — the portable kernel table: every entry point of SimdKernels as a loop over the
// scalar references of toi.hpp, one lane at a time. It is what the engine runs where no
// instruction set of xsimd is built (a build for a CPU other than x86-64, or BALLISTIC_SIMD off),
// and it gives the same bits as the SIMD tables, which give the scalar references' bits.
#include "kernels/toi.hpp"
#include "kernels/toi_simd_table.hpp"

#include <algorithm>
#include <array>

namespace ballistic::detail {
namespace {

void ball_ball(const PairPointers& l, std::size_t n, double horizon, double* out) {
    toi_ball_ball_batch({{l.dpx, n}, {l.dpy, n}, {l.dpz, n}, {l.dvx, n}, {l.dvy, n}, {l.dvz, n}, {l.dax, n}, {l.day, n},
                         {l.daz, n}, {l.sigma, n}},
                        horizon, {out, n});
}

void neighbours(const MoverState& m, const NeighbourPointers& l, std::size_t n, double horizon, double* out) {
    // toi_neighbours_batch() reads the columns through spans; they only need to reach the slots.
    std::size_t size = 0;
    for (std::size_t k = 0; k < n; ++k) size = std::max<std::size_t>(size, l.slot[k] + 1);
    const bool shifted = l.sx != nullptr;
    const NeighbourLanes lanes{{l.x, size},         {l.y, size},  {l.z, size},     {l.vx, size},
                               {l.vy, size},        {l.vz, size}, {l.t, size},     {l.radius, size},
                               {l.slot, n},         {l.sx, shifted ? n : 0}, {l.sy, shifted ? n : 0},
                               {l.sz, shifted ? n : 0}};
    toi_neighbours_batch({{m.px, m.py, m.pz}, {m.vx, m.vy, m.vz}, {m.ax, m.ay, m.az}, m.r, m.now}, lanes, horizon,
                         {out, n});
}

void polynomial(const PolynomialPointers& l, std::size_t n, double horizon, double* out) {
    for (std::size_t k = 0; k < n; ++k)
        out[k] = first_closing_polynomial({l.p0[k], l.p1[k], l.p2[k], l.p3[k], l.p4[k]}, horizon);
}

void ray_sphere(Vec3 origin, Vec3 direction, const SpherePointers& l, std::size_t n, double* out) {
    for (std::size_t k = 0; k < n; ++k)
        out[k] = detail::ray_sphere(origin, direction, {l.cx[k], l.cy[k], l.cz[k]}, l.radius[k]);
}

void state_at(const MotionPointers& l, double T, std::size_t begin, std::size_t end) {
    // What Balls::advance() stores: position_at() and velocity_at(), or the ball's own state at T.
    for (std::size_t s = begin; s < end; ++s) {
        const bool keep = l.t[s] == T;
        const double tau = T - l.t[s];
        auto axis = [&](const double* p, const double* v, const double* a, double* to_p, double* to_v) {
            to_p[s] = keep ? p[s] : p[s] + (v[s] + 0.5 * a[s] * tau) * tau;
            to_v[s] = keep ? v[s] : v[s] + a[s] * tau;
        };
        axis(l.x, l.vx, l.ax, l.to_x, l.to_vx);
        axis(l.y, l.vy, l.ay, l.to_y, l.to_vy);
        axis(l.z, l.vz, l.az, l.to_z, l.to_vz);
    }
}

constexpr SimdTable kTable{"portable", 1, &ball_ball, &neighbours, &polynomial, &ray_sphere, &state_at};

}  // namespace

const SimdTable& simd_table_portable() { return kTable; }

}  // namespace ballistic::detail
