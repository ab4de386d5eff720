// Ballistic — the choice of SIMD instruction set, and the span-to-pointer glue of SimdKernels.
// Compiled with the baseline flags: only the per-arch tables are built with wider ones.
#include "kernels/toi_simd.hpp"

#include "kernels/toi_simd_table.hpp"

#if BALLISTIC_SIMD_X86
#include <xsimd/xsimd.hpp>
#endif

#include <algorithm>
#include <cassert>

namespace ballistic::detail {
namespace {

#if BALLISTIC_SIMD_X86
// xsimd's cpuid says which instruction sets the CPU implements (its `avx512bw` requires F, CD
// and DQ too); the compiler's check adds what xsimd 8.1 does not read: AVX-512VL (the avx512
// translation unit is built with -mavx512vl) and whether the OS saves the wider registers.
bool cpu_runs_avx512bw() {
    const auto cpu = xsimd::available_architectures();
    __builtin_cpu_init();
    return cpu.avx512f && cpu.avx512cd && cpu.avx512dq && cpu.avx512bw && cpu.fma3_avx2 &&
           __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma");
}

bool cpu_runs_fma3_avx2() {
    const auto cpu = xsimd::available_architectures();
    __builtin_cpu_init();
    return cpu.avx2 && cpu.fma3_avx2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

// Best first; SSE2 is part of x86-64. The portable table, one lane at a time, comes last: it is
// the engine's choice only where no instruction set is built.
const std::vector<SimdKernels>& usable() {
    static const std::vector<SimdKernels> kernels = [] {
        std::vector<SimdKernels> list;
#if BALLISTIC_SIMD_X86
        if (cpu_runs_avx512bw()) list.emplace_back(simd_table_avx512bw());
        if (cpu_runs_fma3_avx2()) list.emplace_back(simd_table_fma3_avx2());
        list.emplace_back(simd_table_sse2());
#endif
        list.emplace_back(simd_table_portable());
        return list;
    }();
    return kernels;
}

}  // namespace

const SimdKernels& simd_kernels() {
    static const SimdKernels& best = usable().front();
    return best;
}

std::vector<SimdKernels> simd_kernels_available() { return usable(); }

const SimdKernels* simd_kernels_for(std::string_view name) {
    for (const SimdKernels& kernels : usable())
        if (kernels.name() == name) return &kernels;
    return nullptr;
}

std::string_view SimdKernels::name() const { return table_->name; }
std::size_t SimdKernels::width() const { return table_->width; }

void SimdKernels::ball_ball(const PairLanes& l, double horizon, std::span<double> out) const {
    assert(l.dpx.size() >= out.size() && l.dvx.size() >= out.size() && l.dax.size() >= out.size() &&
           l.sigma.size() >= out.size());
    const PairPointers p{l.dpx.data(), l.dpy.data(), l.dpz.data(), l.dvx.data(), l.dvy.data(),
                         l.dvz.data(), l.dax.data(), l.day.data(), l.daz.data(), l.sigma.data()};
    table_->ball_ball(p, out.size(), horizon, out.data());
}

void SimdKernels::neighbours(const Mover& self, const NeighbourLanes& l, double horizon, std::span<double> out) const {
    const bool shifted = l.shifted(out.size());
    assert(l.slot.size() >= out.size());
    assert(l.y.size() == l.x.size() && l.z.size() == l.x.size() && l.vx.size() == l.x.size() &&
           l.vy.size() == l.x.size() && l.vz.size() == l.x.size() && l.t.size() == l.x.size() &&
           l.radius.size() == l.x.size());
    assert(std::all_of(l.slot.begin(), l.slot.begin() + static_cast<std::ptrdiff_t>(out.size()),
                       [&](std::uint32_t j) { return j < l.x.size(); }));
    const MoverState m{self.p.x, self.p.y, self.p.z, self.v.x, self.v.y, self.v.z,
                       self.a.x, self.a.y, self.a.z, self.r,   self.now};
    const NeighbourPointers p{l.x.data(),  l.y.data(), l.z.data(),      l.vx.data(),   l.vy.data(),
                              l.vz.data(), l.t.data(), l.radius.data(), l.slot.data(),
                              shifted ? l.sx.data() : nullptr, shifted ? l.sy.data() : nullptr,
                              shifted ? l.sz.data() : nullptr};
    table_->neighbours(m, p, out.size(), horizon, out.data());
}

void SimdKernels::polynomial(const PolynomialLanes& l, double horizon, std::span<double> out) const {
    assert(l.p0.size() >= out.size() && l.p1.size() >= out.size() && l.p2.size() >= out.size() &&
           l.p3.size() >= out.size() && l.p4.size() >= out.size());
    table_->polynomial({l.p0.data(), l.p1.data(), l.p2.data(), l.p3.data(), l.p4.data()}, out.size(), horizon,
                       out.data());
}

void SimdKernels::ray_sphere(Vec3 origin, Vec3 direction, const SphereLanes& l,
                             std::span<double> out) const {
    assert(l.cx.size() >= out.size() && l.radius.size() >= out.size());
    table_->ray_sphere(origin, direction, {l.cx.data(), l.cy.data(), l.cz.data(), l.radius.data()},
                       out.size(), out.data());
}

void SimdKernels::state_at(const MotionLanes& l, double T, std::size_t begin, std::size_t end) const {
    assert(begin <= end && l.x.size() >= end && l.vx.size() >= end && l.ax.size() >= end &&
           l.t.size() >= end && l.to_x.size() >= end && l.to_vx.size() >= end);
    const MotionPointers p{l.x.data(),    l.y.data(),    l.z.data(),    l.vx.data(),    l.vy.data(),
                           l.vz.data(),   l.ax.data(),   l.ay.data(),   l.az.data(),    l.t.data(),
                           l.to_x.data(), l.to_y.data(), l.to_z.data(), l.to_vx.data(), l.to_vy.data(),
                           l.to_vz.data()};
    table_->state_at(p, T, begin, end);
}

}  // namespace ballistic::detail
