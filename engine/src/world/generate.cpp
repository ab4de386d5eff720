// Ballistic — deterministic placement of many non-overlapping balls on a jittered cubic lattice.
//
// A simple cubic lattice of spacing a >= 2r never overlaps itself, reaches packing fractions up
// to π/6 ≈ 0.52 without any trial-and-error insertion (random sequential addition jams near
// 0.38), and costs one World::is_free query per site. The largest spacing that still leaves
// `count` free sites spreads the balls as evenly as the region allows; a random subset of the
// free sites plus a small jitter removes the lattice's regularity.
//
// Reproducible bits: only std::mt19937_64 (whose sequence the standard fixes) is used, with our
// own mapping of its bits to doubles; the standard's distributions are implementation-defined and
// are not used. Positions are plain IEEE arithmetic, identical everywhere; velocities also pass
// through std::log, std::sin and std::cos, which the standard does not require to be correctly
// rounded, so they are identical wherever the math library is (every glibc build, for one).
#include <ballistic/generate.hpp>

#include "base/validate.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

namespace ballistic {
namespace {

using detail::reject;
using detail::require_box;
using detail::require_non_negative;
using detail::require_positive;
using detail::show;

// Relative clearance between generated balls and from the region's faces: positions are rounded
// to doubles, and neighbours placed exactly 2r apart could come out touching or overlapping.
constexpr double kClearance = 1e-9;
// Ball handles carry a 32-bit index.
constexpr std::size_t kMaxCount = std::numeric_limits<std::uint32_t>::max();
// The spacing search stops when the bracket is this narrow relative to the spacing: the number
// of free sites is a step function of the spacing, so more precision buys nothing visible.
constexpr double kSpacingTolerance = 1e-6;

void validate(const GenerateDef& def, const std::string& field) {
    if (def.count > kMaxCount) {
        reject(field + ".count", "must be at most " + std::to_string(kMaxCount) + ", got " +
                                     std::to_string(def.count));
    }
    require_positive(field + ".radius", def.radius);
    require_positive(field + ".mass", def.mass);
    require_box(field, def.region, field + ".max");
    if (def.velocity != GenerateDef::Velocity::Speed &&
        def.velocity != GenerateDef::Velocity::Temperature) {
        reject(field + ".velocity", "unknown velocity mode");
    }
    require_non_negative(field + ".speed", def.speed);
    require_non_negative(field + ".temperature", def.temperature);
}

// Uniform and normal deviates from std::mt19937_64 with a fixed, portable bit mapping.
class Random {
public:
    explicit Random(std::uint64_t seed) : engine_(seed) {}

    // Uniform in [0, 1): the top 53 bits as a fraction.
    double uniform() { return static_cast<double>(engine_() >> 11) * 0x1p-53; }

    // Standard normal by Box–Muller; the second deviate of each pair is kept for the next call.
    double normal() {
        if (has_spare_) {
            has_spare_ = false;
            return spare_;
        }
        const double u1 = 1.0 - uniform();  // in (0, 1]: log(u1) is finite
        const double u2 = uniform();
        const double r = std::sqrt(-2.0 * std::log(u1));
        const double angle = 2.0 * std::numbers::pi * u2;
        spare_ = r * std::sin(angle);
        has_spare_ = true;
        return r * std::cos(angle);
    }

private:
    std::mt19937_64 engine_;
    double spare_ = 0.0;
    bool has_spare_ = false;
};

// Axis-aligned box that ball centres may occupy: the region shrunk by the radius (plus the
// clearance). An extent below zero means not even one ball fits along that axis.
struct CentreBox {
    std::array<double, 3> lo{};
    std::array<double, 3> hi{};
};

CentreBox centre_box(const GenerateDef& def) {
    const double inset = def.radius * (1.0 + kClearance);
    return {{def.region.min.x + inset, def.region.min.y + inset, def.region.min.z + inset},
            {def.region.max.x - inset, def.region.max.y - inset, def.region.max.z - inset}};
}

// A simple cubic lattice of `spacing`, centred in the centre box.
struct Lattice {
    double spacing = 0.0;
    std::array<double, 3> first{};       // coordinate of the first site on each axis
    std::array<std::uint64_t, 3> n{};    // sites on each axis

    double total() const {
        return static_cast<double>(n[0]) * static_cast<double>(n[1]) * static_cast<double>(n[2]);
    }
};

Lattice make_lattice(const CentreBox& box, double spacing) {
    Lattice lattice;
    lattice.spacing = spacing;
    for (std::size_t k = 0; k < 3; ++k) {
        const double extent = box.hi[k] - box.lo[k];
        if (extent < 0.0) {
            lattice.n[k] = 0;
            continue;
        }
        // Capped so that huge regions with tiny spacings cannot overflow the count; such a lattice
        // holds far more sites than kMaxCount balls anyway.
        const double steps = std::min(std::floor(extent / spacing), 0x1p40);
        lattice.n[k] = static_cast<std::uint64_t>(steps) + 1;
        lattice.first[k] = box.lo[k] + 0.5 * (extent - steps * spacing);
    }
    return lattice;
}

// Coordinate of site i along axis k, clamped so rounding never puts it outside the centre box.
double site_coordinate(const Lattice& lattice, const CentreBox& box, std::size_t k, std::uint64_t i) {
    const double x = lattice.first[k] + static_cast<double>(i) * lattice.spacing;
    return std::clamp(x, box.lo[k], box.hi[k]);
}

// Lattice sites examined at most for `count` balls: a region in which fewer than about one site
// in 64 is free (most of it behind walls or inside columns, or far larger than the room) is
// refused instead of searched.
std::uint64_t site_budget(std::size_t count) { return 64 * static_cast<std::uint64_t>(count) + (std::uint64_t{1} << 16); }

struct FreeSites {
    std::vector<Vec3> sites;
    bool exhausted = false;  // the budget ran out before the lattice or the limit did
};

// Free lattice sites in lattice order (x fastest, then y, then z), stopping once `limit` are found
// or `budget` sites were examined.
FreeSites free_sites(const World& world, const Lattice& lattice, const CentreBox& box, double radius,
                     std::size_t limit, std::uint64_t budget) {
    FreeSites found;
    std::uint64_t examined = 0;
    for (std::uint64_t k = 0; k < lattice.n[2]; ++k) {
        const double z = site_coordinate(lattice, box, 2, k);
        for (std::uint64_t j = 0; j < lattice.n[1]; ++j) {
            const double y = site_coordinate(lattice, box, 1, j);
            for (std::uint64_t i = 0; i < lattice.n[0]; ++i) {
                if (++examined > budget) {
                    found.exhausted = true;
                    return found;
                }
                const Vec3 site{site_coordinate(lattice, box, 0, i), y, z};
                if (!world.is_free(site, radius)) continue;
                found.sites.push_back(site);
                if (found.sites.size() >= limit) return found;
            }
        }
    }
    return found;
}

// Largest spacing (to kSpacingTolerance) whose lattice has at least `count` free sites, given that
// `smallest` has enough. `largest` bounds it from above: there the lattice holds `count` sites in
// total, so no larger spacing can have `count` free ones.
double search_spacing(const World& world, const CentreBox& box, double radius, std::size_t count,
                      double smallest, double largest) {
    const auto enough = [&](double spacing) {
        return free_sites(world, make_lattice(box, spacing), box, radius, count, site_budget(count)).sites.size() >= count;
    };
    if (enough(largest)) return largest;
    double lo = smallest;
    double hi = largest;
    while (hi - lo > kSpacingTolerance * lo) {
        const double mid = lo + 0.5 * (hi - lo);
        (enough(mid) ? lo : hi) = mid;
    }
    return lo;
}

// Largest spacing whose lattice has at least `count` sites in total, free or not. The total is a
// non-increasing step function of the spacing, so bisection to the last representable double
// is exact; it costs no is_free queries.
double largest_spacing_by_total(const CentreBox& box, std::size_t count, double smallest) {
    const double wanted = static_cast<double>(count);
    double widest = 0.0;
    for (std::size_t k = 0; k < 3; ++k) widest = std::max(widest, box.hi[k] - box.lo[k]);
    // Beyond the widest extent every axis holds one site.
    double hi = smallest + widest + 1.0;
    if (make_lattice(box, hi).total() >= wanted) return hi;
    double lo = smallest;
    for (;;) {
        const double mid = lo + 0.5 * (hi - lo);
        if (mid <= lo || mid >= hi) return lo;
        (make_lattice(box, mid).total() >= wanted ? lo : hi) = mid;
    }
}

// Selection sampling (Knuth's Algorithm S): every subset of `count` sites is equally likely and
// the chosen sites stay in lattice order, which keeps neighbours near each other in memory.
std::vector<Vec3> choose_sites(const std::vector<Vec3>& sites, std::size_t count, Random& random) {
    std::vector<Vec3> chosen;
    chosen.reserve(count);
    std::size_t remaining = sites.size();
    for (const Vec3& site : sites) {
        const std::size_t needed = count - chosen.size();
        if (needed == 0) break;
        if (random.uniform() * static_cast<double>(remaining) < static_cast<double>(needed)) {
            chosen.push_back(site);
        }
        --remaining;
    }
    return chosen;
}

// Moves a ball uniformly within ±half_width of its site on each axis (clipped to the centre box).
// Neighbours then stay at least spacing − 2·half_width apart. The move is dropped when the new
// place touches a ball or static already in the world.
Vec3 jitter(const World& world, Vec3 site, const CentreBox& box, double half_width, double radius,
            Random& random) {
    const std::array<double, 3> centre{site.x, site.y, site.z};
    std::array<double, 3> moved{};
    for (std::size_t k = 0; k < 3; ++k) {
        const double low = std::max(centre[k] - half_width, box.lo[k]);
        const double high = std::min(centre[k] + half_width, box.hi[k]);
        moved[k] = std::clamp(low + random.uniform() * (high - low), low, high);
    }
    const Vec3 position{moved[0], moved[1], moved[2]};
    return world.is_free(position, radius) ? position : site;
}

Vec3 random_direction(Random& random) {
    const double z = 2.0 * random.uniform() - 1.0;
    const double angle = 2.0 * std::numbers::pi * random.uniform();
    const double ring = std::sqrt(std::max(0.0, 1.0 - z * z));
    return {ring * std::cos(angle), ring * std::sin(angle), z};
}

Vec3 random_velocity(const GenerateDef& def, Random& random) {
    if (def.velocity == GenerateDef::Velocity::Speed) return def.speed * random_direction(random);
    const double sigma = std::sqrt(def.temperature / def.mass);
    const double vx = random.normal();
    const double vy = random.normal();
    const double vz = random.normal();
    return sigma * Vec3{vx, vy, vz};
}

// Neumaier-compensated sum: the residual momentum after subtracting the mean then stays at the
// rounding level of one velocity instead of growing with the number of balls.
class CompensatedSum {
public:
    void add(double value) {
        const double t = sum_ + value;
        compensation_ += std::abs(sum_) >= std::abs(value) ? (sum_ - t) + value : (value - t) + sum_;
        sum_ = t;
    }
    double value() const { return sum_ + compensation_; }

private:
    double sum_ = 0.0;
    double compensation_ = 0.0;
};

void remove_mean_velocity(std::vector<BallDef>& balls) {
    if (balls.empty()) return;
    CompensatedSum x, y, z;
    for (const BallDef& ball : balls) {
        x.add(ball.velocity.x);
        y.add(ball.velocity.y);
        z.add(ball.velocity.z);
    }
    const Vec3 mean = Vec3{x.value(), y.value(), z.value()} / static_cast<double>(balls.size());
    for (BallDef& ball : balls) ball.velocity -= mean;
}

// Seed of the velocity stream: independent of the placement stream, so the velocities of a
// given seed do not change when obstacles change how many sites the placement visits.
std::uint64_t velocity_seed(std::uint64_t seed) {
    std::uint64_t z = seed + 0x9e3779b97f4a7c15ull;  // splitmix64 finaliser
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

}  // namespace

std::vector<BallDef> generate_balls(const World& world, const GenerateDef& def,
                                    const std::string& field) {
    validate(def, field);
    if (def.count == 0) return {};
    if (def.count > world.max_balls() - world.ball_count()) {
        // Before any site is enumerated: the balls could not be added anyway.
        reject(field + ".count", "asks for " + std::to_string(def.count) + " balls; the world holds " +
                                     std::to_string(world.ball_count()) + " and may hold at most " +
                                     std::to_string(world.max_balls()) + " (WorldDef::memory_limit over " +
                                     std::to_string(kBytesPerBall) + " bytes per ball, " +
                                     std::to_string(kBytesPerBallInRegions) +
                                     " more with more than one thread; the program's --memory-limit)");
    }

    const CentreBox box = centre_box(def);
    const double smallest = 2.0 * def.radius * (1.0 + kClearance);
    const std::uint64_t budget = site_budget(def.count);
    const auto too_large = [&] {
        reject(field + ".min", "the region " + show(def.region.min) + " to " + show(def.region.max) + " is too large to search for " +
                                   std::to_string(def.count) + " free places: more than " + std::to_string(budget) +
                                   " lattice sites examined, too few of them free (keep min and max to where the balls can go)");
    };
    // The densest lattice decides whether the balls fit; when they do not, its enumeration ran to
    // the end and counted every site that fits.
    const FreeSites densest = free_sites(world, make_lattice(box, smallest), box, def.radius, def.count, budget);
    if (densest.exhausted) too_large();
    const std::size_t fit = densest.sites.size();
    if (fit < def.count) {
        reject(field + ".count", "only " + std::to_string(fit) + " balls of radius " +
                                     show(def.radius) + " fit in the region, asked for " +
                                     std::to_string(def.count));
    }
    const double largest = largest_spacing_by_total(box, def.count, smallest);
    const double spacing = search_spacing(world, box, def.radius, def.count, smallest, largest);
    const Lattice lattice = make_lattice(box, spacing);

    Random placement(def.seed);
    const FreeSites all = free_sites(world, lattice, box, def.radius, kMaxCount, budget);
    if (all.exhausted) too_large();
    const std::vector<Vec3> sites = choose_sites(all.sites, def.count, placement);
    const double half_width = 0.5 * (spacing - smallest);

    Random velocities(velocity_seed(def.seed));
    std::vector<BallDef> balls;
    balls.reserve(sites.size());
    for (const Vec3& site : sites) {
        BallDef ball;
        ball.position = jitter(world, site, box, half_width, def.radius, placement);
        ball.velocity = random_velocity(def, velocities);
        ball.radius = def.radius;
        ball.mass = def.mass;
        balls.push_back(ball);
    }
    if (def.zero_momentum) remove_mean_velocity(balls);
    return balls;
}

}  // namespace ballistic
