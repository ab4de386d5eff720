// Ballistic renderer — the instance fill: SoA doubles → 24-byte float instances, in parallel.
#include "shared.h"

#include <ballistic/render/renderer.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>

namespace ballistic::render {
namespace {

// Big enough to amortise task overhead, small enough to balance two to a few dozen cores.
constexpr std::size_t kGrain = 16384;

struct Partial {
    double max_sq_speed = 0.0;
    std::vector<std::uint32_t> near;   // in storage order within the range
};

template <bool kSpeeds, bool kNear>
void fill_range(const BallView& b, gpu::BallInstance* out, std::size_t begin, std::size_t end, const NearQuery* query,
                std::span<const std::uint8_t> sleeping, Partial& partial) {
    double max_sq = partial.max_sq_speed;
    const double ex = kNear ? query->eye.x : 0.0;
    const double ey = kNear ? query->eye.y : 0.0;
    const double ez = kNear ? query->eye.z : 0.0;
    const double factor_sq = kNear ? query->radius_factor * query->radius_factor : 0.0;
    for (std::size_t i = begin; i < end; ++i) {
        float speed = 0.0f;
        if constexpr (kSpeeds) {
            const double sq = b.vx[i] * b.vx[i] + b.vy[i] * b.vy[i] + b.vz[i] * b.vz[i];
            max_sq = std::max(max_sq, sq);
            speed = static_cast<float>(std::sqrt(sq));
        }
        if constexpr (kNear) {
            const double dx = b.x[i] - ex, dy = b.y[i] - ey, dz = b.z[i] - ez;
            if (dx * dx + dy * dy + dz * dz < factor_sq * b.radius[i] * b.radius[i]) {
                partial.near.push_back(static_cast<std::uint32_t>(i));
            }
        }
        if (!sleeping.empty() && sleeping[i]) speed = -1.0f;
        out[i] = {static_cast<float>(b.x[i]), static_cast<float>(b.y[i]), static_cast<float>(b.z[i]),
                  static_cast<float>(b.radius[i]), speed, b.id[i].index()};
    }
    partial.max_sq_speed = max_sq;
}

template <bool kSpeeds, bool kNear>
Partial fill_all(const BallView& balls, gpu::BallInstance* out, const NearQuery* query,
                 std::span<const std::uint8_t> sleeping) {
    const std::size_t n = balls.x.size();
    // parallel_reduce joins left to right, so the near list stays in storage order.
    return tbb::parallel_reduce(
        tbb::blocked_range<std::size_t>(0, n, kGrain), Partial{},
        [&](const tbb::blocked_range<std::size_t>& r, Partial partial) {
            fill_range<kSpeeds, kNear>(balls, out, r.begin(), r.end(), query, sleeping, partial);
            return partial;
        },
        [](Partial left, Partial right) {
            left.max_sq_speed = std::max(left.max_sq_speed, right.max_sq_speed);
            left.near.insert(left.near.end(), right.near.begin(), right.near.end());
            return left;
        });
}

}  // namespace

double fill_instances(const BallView& balls, bool speeds, std::span<std::byte> out, NearQuery* near,
                      std::span<const std::uint8_t> sleeping) {
    auto* instances = reinterpret_cast<gpu::BallInstance*>(out.data());
    Partial result;
    if (speeds) {
        result = near ? fill_all<true, true>(balls, instances, near, sleeping)
                      : fill_all<true, false>(balls, instances, near, sleeping);
    } else {
        result = near ? fill_all<false, true>(balls, instances, near, sleeping)
                      : fill_all<false, false>(balls, instances, near, sleeping);
    }
    if (near != nullptr) near->indices = std::move(result.near);
    return std::sqrt(result.max_sq_speed);
}

std::array<float, 3> ball_color(BallId id) {
    return {gpu::ballistic_id_color(id.index(), 0), gpu::ballistic_id_color(id.index(), 1),
            gpu::ballistic_id_color(id.index(), 2)};
}

std::array<float, 3> sleeping_color() {
    return {gpu::ballistic_sleeping_color(0), gpu::ballistic_sleeping_color(1), gpu::ballistic_sleeping_color(2)};
}

std::uint8_t to_srgb8(float linear) {
    const float c = std::clamp(linear, 0.0f, 1.0f);
    const float encoded = c <= 0.0031308f ? 12.92f * c : 1.055f * std::pow(c, 1.0f / 2.4f) - 0.055f;
    return static_cast<std::uint8_t>(std::lround(encoded * 255.0f));
}

}  // namespace ballistic::render
