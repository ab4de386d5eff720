// Ballistic — the one xsimd implementation of the SIMD kernels (toi_simd.hpp), templated on the
// instruction set. Each toi_simd_<arch>.cpp instantiates it with its own -m flags; toi_simd.cpp
// only sees SimdTable and the per-arch getters.
//
// Same bits as the scalar references: every lane runs the operations of the scalar code in the
// same order (operator precedence and left-to-right sums included), using only IEEE-exact
// basic operations; the translation units are built with -ffp-contract=off so that no
// multiply-add is fused. Branches of the scalar code become masks evaluated in the same order
// of precedence; lanes masked out may compute inf or NaN, which is discarded.
#pragma once

#include "toi.hpp"

#include <xsimd/xsimd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace ballistic::detail {

// Plain pointers at the boundary to the per-arch translation units. Code compiled there with
// -mavx512… must not instantiate templates that baseline code also instantiates (std::span,
// std::min, Vec3 helpers): the linker keeps one copy of each, possibly the AVX-512 one.
struct PairPointers {
    const double *dpx, *dpy, *dpz, *dvx, *dvy, *dvz, *dax, *day, *daz, *sigma;
};
struct PlanePointers {
    const double *c0, *c1, *c2;
};
struct CylinderPointers {
    const double *wx, *wy, *wz, *vx, *vy, *vz, *ax, *ay, *az, *ux, *uy, *uz, *rho;
};
struct SpherePointers {
    const double *cx, *cy, *cz, *radius;
};
struct NeighbourPointers {
    const double *x, *y, *z, *vx, *vy, *vz, *t, *radius;
    const std::uint32_t* slot;
    const double *sx, *sy, *sz;
};
struct MoverState {  // Mover without Vec3
    double px, py, pz, vx, vy, vz, ax, ay, az, r, now;
};
struct MotionPointers {
    double *x, *y, *z, *vx, *vy, *vz;
    const double *ax, *ay, *az;
    double* t;
};

struct SimdTable {
    const char* name;
    std::size_t width;
    void (*ball_ball)(const PairPointers&, std::size_t n, double horizon, double* out);
    void (*ball_plane)(const PlanePointers&, std::size_t n, double horizon, double* out);
    void (*ball_cylinder)(const CylinderPointers&, std::size_t n, double horizon, double* out);
    void (*neighbours)(const MoverState&, const NeighbourPointers&, std::size_t n, double horizon, double* out);
    void (*ray_sphere)(Vec3 origin, Vec3 direction, const SpherePointers&, std::size_t n, double* out);
    void (*advance)(const MotionPointers&, double T, std::size_t begin, std::size_t end);
};

// Defined by toi_simd_avx512.cpp, toi_simd_avx2.cpp and toi_simd_sse2.cpp.
const SimdTable& simd_table_avx512bw();
const SimdTable& simd_table_fma3_avx2();
const SimdTable& simd_table_sse2();

template <class Arch>
struct SimdImpl {
    using B = xsimd::batch<double, Arch>;
    using M = xsimd::batch_bool<double, Arch>;
    static constexpr std::size_t W = B::size;

    // Lanes k … k + count − 1 of an array; a partial batch is padded with zeros (harmless in
    // every kernel, and its lanes are never stored).
    template <bool Full>
    static B load(const double* p, std::size_t k, std::size_t count) {
        if constexpr (Full) {
            return B::load_unaligned(p + k);
        } else {
            alignas(64) double lane[W] = {};
            for (std::size_t i = 0; i < count; ++i) lane[i] = p[k + i];
            return B::load_aligned(lane);
        }
    }
    template <bool Full>
    static void store(const B& b, double* p, std::size_t k, std::size_t count) {
        if constexpr (Full) {
            b.store_unaligned(p + k);
        } else {
            alignas(64) double lane[W];
            b.store_aligned(lane);
            for (std::size_t i = 0; i < count; ++i) p[k + i] = lane[i];
        }
    }

    // first_closing_quadratic(), lane by lane, with the same bits.
    //
    // The scalar code divides twice (roots r1 = q / c2, r2 = c0 / q) and keeps the smaller root
    // of a convex gap, the larger of a concave one. Divisions and square roots are the bottleneck
    // of this kernel (a 512-bit divide costs about four scalar ones, bench/README.md), so it divides
    // once where it can prove which root the scalar code keeps: with the computed q,
    // q² ≥ c1²/4 = c0 c2 + D/4 (D = c1² − 4 c0 c2 exactly), so when D > 0 the exact roots satisfy
    // r1 − r2 = (q² − c0 c2) / (q c2) with the sign of q c2, the kept root is c0 / q for q > 0
    // and q / c2 for q < 0, and rounding (monotone) cannot reorder them. D > 0 is certain when
    // the computed discriminant exceeds 2⁻⁵⁰ (c1² + |4 c2 c0|), four times its rounding error
    // bound. Lanes that are not certain (a near-double root: grazing contacts; non-finite input)
    // or whose root is zero (signed zeros) make the batch take the two-division path.
    [[gnu::always_inline]] static B first_closing(const B& c0, const B& c1, const B& c2,
                                                  const B& horizon) {
        const B zero(0.0);
        const M closed = c0 <= zero;
        const M now = closed & ((c1 < zero) | ((c1 == zero) & (c2 < zero)));
        const M linear = c2 == zero;
        B t = zero;
        M ok(false);
        if (xsimd::any(linear & ~now)) {
            // c2 = 0: an open gap closing at a constant rate.
            t = xsimd::select(linear, -c0 / c1, t);
            ok = linear & ~closed & ~(c1 >= zero);
        }
        const B c1c1 = c1 * c1, c2c0 = B(4.0) * c2 * c0;
        const B disc = c1c1 - c2c0;
        const M solve = ~linear & ~now & ~(disc < zero);
        if (xsimd::any(solve)) {
            const B q = B(-0.5) * (c1 + xsimd::copysign(xsimd::sqrt(disc), c1));
            const M q_positive = q > zero;
            B root = xsimd::select(q_positive, c0, q) / xsimd::select(q_positive, q, c2);
            const B certain = B(0x1p-50) * (c1c1 + xsimd::abs(c2c0)) + B(0x1p-1020);
            if (xsimd::any(solve & (~(disc > certain) | (root == zero)))) {
                const B r1 = q / c2, r2 = c0 / q;  // std::min / std::max argument order
                root = xsimd::select(c2 > zero, xsimd::select(r2 < r1, r2, r1),
                                     xsimd::select(r1 < r2, r2, r1));
            }
            t = xsimd::select(solve, root, t);
            ok = ok | (solve & ~(q == zero) & ((closed & (root > zero)) | (~closed & ~(root < zero))));
        }
        // A closed gap pulled back before it could open closes again at its maximum.
        const M pulled = closed & ~now & (c2 < zero) & (disc < zero);
        if (xsimd::any(pulled)) {
            t = xsimd::select(pulled, -c1 / (B(2.0) * c2), t);
            ok = ok | pulled;
        }
        ok = ok & (t <= horizon);
        return xsimd::select(now, zero, xsimd::select(ok, t, B(kNever)));
    }

    // ---- ball–ball: toi_ball_ball() ---------------------------------------------------------
    // Its quadratic case (da = 0).
    [[gnu::always_inline]] static B pair_quadratic(const B& dpx, const B& dpy, const B& dpz, const B& dvx,
                                                   const B& dvy, const B& dvz, const B& sigma, double horizon) {
        const B c0 = (dpx * dpx + dpy * dpy + dpz * dpz) - sigma * sigma;
        const B c1 = B(2.0) * (dpx * dvx + dpy * dvy + dpz * dvz);
        const B c2 = dvx * dvx + dvy * dvy + dvz * dvz;
        return first_closing(c0, c1, c2, B(horizon));
    }
    template <bool Full>
    static void ball_ball_chunk(const PairPointers& l, std::size_t k, std::size_t count,
                                double horizon, double* out) {
        const B dpx = load<Full>(l.dpx, k, count), dpy = load<Full>(l.dpy, k, count),
                dpz = load<Full>(l.dpz, k, count);
        const B dvx = load<Full>(l.dvx, k, count), dvy = load<Full>(l.dvy, k, count),
                dvz = load<Full>(l.dvz, k, count);
        const B dax = load<Full>(l.dax, k, count), day = load<Full>(l.day, k, count),
                daz = load<Full>(l.daz, k, count);
        const B sigma = load<Full>(l.sigma, k, count);
        const B zero(0.0);
        // ~(x == 0), not x != 0: xsimd 8.1's != is ordered on AVX (false for NaN) but unordered
        // on SSE2, and the scalar da == 0 test sends NaN to the quartic.
        const M quartic = ~(dax == zero) | ~(day == zero) | ~(daz == zero);
        if (!xsimd::all(quartic)) store<Full>(pair_quadratic(dpx, dpy, dpz, dvx, dvy, dvz, sigma, horizon), out, k, count);
        if (xsimd::any(quartic)) {
            // Relative acceleration: the quartic, through the scalar reference.
            for (std::size_t i = k; i < k + count; ++i) {
                if (l.dax[i] != 0.0 || l.day[i] != 0.0 || l.daz[i] != 0.0)
                    out[i] = toi_ball_ball({l.dpx[i], l.dpy[i], l.dpz[i]}, {l.dvx[i], l.dvy[i], l.dvz[i]},
                                           {l.dax[i], l.day[i], l.daz[i]}, l.sigma[i], horizon);
            }
        }
    }
    static void ball_ball(const PairPointers& l, std::size_t n, double horizon, double* out) {
        std::size_t k = 0;
        for (; k + W <= n; k += W) ball_ball_chunk<true>(l, k, W, horizon, out);
        if (k < n) ball_ball_chunk<false>(l, k, n - k, horizon, out);
    }

    // ---- one ball against its neighbours: toi_neighbours_batch() -----------------------------
    // Lanes column[slot[0]], column[slot[1]] … built in registers: scalar loads, which beat the
    // gather instructions (microcoded on AMD Zen) at these widths.
    template <std::size_t... L>
    static B gather(const double* column, const std::uint32_t* slot, std::index_sequence<L...>) {
        return B{column[slot[L]]...};
    }
    static B gather(const double* column, const std::uint32_t* slot) {
        return gather(column, slot, std::make_index_sequence<W>());
    }
    template <bool Full>
    static void neighbours_chunk(const MoverState& m, const NeighbourPointers& l, std::size_t k,
                                 std::size_t count, double horizon, double* out) {
        // A partial chunk repeats its first slot in the padding lanes (never stored).
        std::uint32_t padded[W];
        const std::uint32_t* slot = l.slot + k;
        if constexpr (!Full) {
            for (std::size_t i = 0; i < W; ++i) padded[i] = slot[i < count ? i : 0];
            slot = padded;
        }
        const B tau = B(m.now) - gather(l.t, slot);
        // Balls::position_at(): x + (vx + 0.5 a τ) τ, minus the mover's, plus the image shift;
        // velocity_at(): vx + a τ, minus the mover's.
        auto axis = [&](const double* x, const double* v, const double* shift, double p0, double v0, double a,
                        B& dp, B& dv) {
            const B vj = gather(v, slot);
            dp = ((gather(x, slot) + (vj + B(0.5 * a) * tau) * tau) - B(p0)) +
                 load<Full>(shift, k, count);
            dv = (vj + B(a) * tau) - B(v0);
        };
        B dpx, dpy, dpz, dvx, dvy, dvz;
        axis(l.x, l.vx, l.sx, m.px, m.vx, m.ax, dpx, dvx);
        axis(l.y, l.vy, l.sy, m.py, m.vy, m.ay, dpy, dvy);
        axis(l.z, l.vz, l.sz, m.pz, m.vz, m.az, dpz, dvz);
        const B sigma = B(m.r) + gather(l.radius, slot);
        store<Full>(pair_quadratic(dpx, dpy, dpz, dvx, dvy, dvz, sigma, horizon), out, k, count);
    }
    static void neighbours(const MoverState& m, const NeighbourPointers& l, std::size_t n, double horizon,
                           double* out) {
        std::size_t k = 0;
        for (; k + W <= n; k += W) neighbours_chunk<true>(m, l, k, W, horizon, out);
        if (k < n) neighbours_chunk<false>(m, l, k, n - k, horizon, out);
    }

    // ---- quadratic gaps (ball–plane, cell faces): first_closing_quadratic() ------------------
    template <bool Full>
    static void ball_plane_chunk(const PlanePointers& l, std::size_t k, std::size_t count,
                                 double horizon, double* out) {
        store<Full>(first_closing(load<Full>(l.c0, k, count), load<Full>(l.c1, k, count),
                                  load<Full>(l.c2, k, count), B(horizon)),
                    out, k, count);
    }
    static void ball_plane(const PlanePointers& l, std::size_t n, double horizon, double* out) {
        std::size_t k = 0;
        for (; k + W <= n; k += W) ball_plane_chunk<true>(l, k, W, horizon, out);
        if (k < n) ball_plane_chunk<false>(l, k, n - k, horizon, out);
    }

    // ---- ball–cylinder: toi_ball_cylinder() -------------------------------------------------
    template <bool Full>
    static void ball_cylinder_chunk(const CylinderPointers& l, std::size_t k, std::size_t count,
                                    double horizon, double* out) {
        const B ux = load<Full>(l.ux, k, count), uy = load<Full>(l.uy, k, count),
                uz = load<Full>(l.uz, k, count);
        // across(w, u) = w − u (w·u) for the position, velocity and half the acceleration.
        const B wx = load<Full>(l.wx, k, count), wy = load<Full>(l.wy, k, count),
                wz = load<Full>(l.wz, k, count);
        const B wu = wx * ux + wy * uy + wz * uz;
        const B w0x = wx - ux * wu, w0y = wy - uy * wu, w0z = wz - uz * wu;
        const B vx = load<Full>(l.vx, k, count), vy = load<Full>(l.vy, k, count),
                vz = load<Full>(l.vz, k, count);
        const B vu = vx * ux + vy * uy + vz * uz;
        const B w1x = vx - ux * vu, w1y = vy - uy * vu, w1z = vz - uz * vu;
        const B ax = load<Full>(l.ax, k, count), ay = load<Full>(l.ay, k, count),
                az = load<Full>(l.az, k, count);
        const B au = ax * ux + ay * uy + az * uz;
        const B half(0.5);
        const B w2x = (ax - ux * au) * half, w2y = (ay - uy * au) * half, w2z = (az - uz * au) * half;
        const B rho = load<Full>(l.rho, k, count);
        // squared_gap(): |w0 + w1 τ + w2 τ²|² − ρ².
        const B two(2.0);
        const B p0 = (w0x * w0x + w0y * w0y + w0z * w0z) - rho * rho;
        const B p1 = two * (w0x * w1x + w0y * w1y + w0z * w1z);
        const B p2 = (w1x * w1x + w1y * w1y + w1z * w1z) + two * (w0x * w2x + w0y * w2y + w0z * w2z);
        const B p3 = two * (w1x * w2x + w1y * w2y + w1z * w2z);
        const B p4 = w2x * w2x + w2y * w2y + w2z * w2z;
        const B zero(0.0);
        const M quartic = ~(p4 == zero) | ~(p3 == zero);  // degree_of(); ~(x == 0) as above
        if (!xsimd::all(quartic)) store<Full>(first_closing(p0, p1, p2, B(horizon)), out, k, count);
        if (xsimd::any(quartic)) {
            // Acceleration across the axis: the quartic, through the scalar solver on the
            // coefficients toi_ball_cylinder() would form.
            alignas(64) double c[5][W];
            p0.store_aligned(c[0]);
            p1.store_aligned(c[1]);
            p2.store_aligned(c[2]);
            p3.store_aligned(c[3]);
            p4.store_aligned(c[4]);
            for (std::size_t i = 0; i < count; ++i) {
                if (c[4][i] != 0.0 || c[3][i] != 0.0) {
                    const std::array<double, 5> p{c[0][i], c[1][i], c[2][i], c[3][i], c[4][i]};
                    out[k + i] = first_closing_polynomial(p, horizon);
                }
            }
        }
    }
    static void ball_cylinder(const CylinderPointers& l, std::size_t n, double horizon, double* out) {
        std::size_t k = 0;
        for (; k + W <= n; k += W) ball_cylinder_chunk<true>(l, k, W, horizon, out);
        if (k < n) ball_cylinder_chunk<false>(l, k, n - k, horizon, out);
    }

    // ---- ray–sphere: ray_sphere() -----------------------------------------------------------
    template <bool Full>
    static void ray_sphere_chunk(const B (&o)[3], const B (&d)[3], const B& dd, const SpherePointers& l,
                                 std::size_t k, std::size_t count, double* out) {
        const B ocx = load<Full>(l.cx, k, count) - o[0], ocy = load<Full>(l.cy, k, count) - o[1],
                ocz = load<Full>(l.cz, k, count) - o[2];
        const B r = load<Full>(l.radius, k, count);
        const B c = (ocx * ocx + ocy * ocy + ocz * ocz) - r * r;
        const B b = ocx * d[0] + ocy * d[1] + ocz * d[2];
        const B disc = b * b - dd * c;
        const B zero(0.0);
        const M inside = c <= zero, miss = (b <= zero) | (disc < zero);
        B t(-1.0);
        if (xsimd::any(~inside & ~miss)) t = xsimd::select(miss, t, c / (b + xsimd::sqrt(disc)));
        store<Full>(xsimd::select(inside, zero, t), out, k, count);
    }
    static void ray_sphere(Vec3 origin, Vec3 direction, const SpherePointers& l, std::size_t n,
                           double* out) {
        const B o[3] = {B(origin.x), B(origin.y), B(origin.z)};
        const B d[3] = {B(direction.x), B(direction.y), B(direction.z)};
        const B dd(direction.x * direction.x + direction.y * direction.y + direction.z * direction.z);
        std::size_t k = 0;
        for (; k + W <= n; k += W) ray_sphere_chunk<true>(o, d, dd, l, k, W, out);
        if (k < n) ray_sphere_chunk<false>(o, d, dd, l, k, n - k, out);
    }

    // ---- end-of-step advance: Balls::advance() ----------------------------------------------
    template <bool Full>
    static void advance_chunk(const MotionPointers& l, const B& T, std::size_t k, std::size_t count) {
        const B t = load<Full>(l.t, k, count);
        const M keep = t == T;  // advance() leaves a ball already at T untouched
        const B tau = T - t;
        const B half(0.5);
        auto axis = [&](double* p, double* v, const double* a) {
            const B p0 = load<Full>(p, k, count), v0 = load<Full>(v, k, count), a0 = load<Full>(a, k, count);
            // position_at(): p + (v + 0.5 a τ) τ; velocity_at(): v + a τ.
            store<Full>(xsimd::select(keep, p0, p0 + (v0 + half * a0 * tau) * tau), p, k, count);
            store<Full>(xsimd::select(keep, v0, v0 + a0 * tau), v, k, count);
        };
        axis(l.x, l.vx, l.ax);
        axis(l.y, l.vy, l.ay);
        axis(l.z, l.vz, l.az);
        store<Full>(xsimd::select(keep, t, T), l.t, k, count);
    }
    static void advance(const MotionPointers& l, double T, std::size_t begin, std::size_t end) {
        const B time(T);
        std::size_t k = begin;
        for (; k + W <= end; k += W) advance_chunk<true>(l, time, k, W);
        if (k < end) advance_chunk<false>(l, time, k, end - k);
    }
};

template <class Arch>
constexpr SimdTable make_simd_table() {
    using Impl = SimdImpl<Arch>;
    return {Arch::name(),         Impl::W,           &Impl::ball_ball, &Impl::ball_plane,
            &Impl::ball_cylinder, &Impl::neighbours, &Impl::ray_sphere, &Impl::advance};
}

}  // namespace ballistic::detail
