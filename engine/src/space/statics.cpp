// Ballistic — the statics (statics.hpp).
#include "space/statics.hpp"

#include "base/byte_stream.hpp"
#include "base/validate.hpp"

#include <algorithm>
#include <cmath>

namespace ballistic::detail {
namespace {
Vec3 lowest(Vec3 a, Vec3 b) { return {std::min(a.x, b.x), std::min(a.y, b.y), std::min(a.z, b.z)}; }
Vec3 highest(Vec3 a, Vec3 b) { return {std::max(a.x, b.x), std::max(a.y, b.y), std::max(a.z, b.z)}; }
}  // namespace

PlaneDef Statics::checked(const PlaneDef& def, const std::string& field) {
    require_finite(field + ".point", def.point);
    require_nonzero(field + ".normal", def.normal);
    return {def.point, normalize(def.normal)};
}

CylinderDef Statics::checked(const CylinderDef& def, const std::string& field) {
    require_finite(field + ".point", def.point);
    require_nonzero(field + ".axis", def.axis);
    require_positive(field + ".radius", def.radius);
    return {def.point, normalize(def.axis), def.radius};
}

Capsule Statics::checked(const CapsuleDef& def, const std::string& field) {
    require_finite(field + ".a", def.a);
    require_finite(field + ".b", def.b);
    require_positive(field + ".radius", def.radius);
    require_finite(field + ".radius", def.radius);
    const Vec3 d = def.b - def.a;
    const double len = length(d);  // finite: both ends are within kMaxMagnitude
    return {def, len > 0.0 ? d / len : Vec3{}, len};
}

BlockDef Statics::checked(const BlockDef& def, const std::string& field) {
    require_finite(field + ".min", def.min);
    require_finite(field + ".max", def.max);
    if (!(def.min.x < def.max.x && def.min.y < def.max.y && def.min.z < def.max.z))
        reject(field + ".max", "must be greater than " + field + ".min on every axis, got min " + show(def.min) +
                                   " and max " + show(def.max));
    return def;
}

std::uint32_t Statics::add(const PlaneDef& unit) {
    planes_.push_back(unit);
    flat_ = true;
    return static_cast<std::uint32_t>(planes_.size() - 1);
}

std::uint32_t Statics::add(const CylinderDef& unit) {
    cylinders_.push_back(unit);
    return static_cast<std::uint32_t>(cylinders_.size() - 1);
}

std::uint32_t Statics::add(const Capsule& capsule) {
    capsules_.push_back(capsule);
    forget_near_points();
    return static_cast<std::uint32_t>(capsules_.size() - 1);
}

void Statics::remove_capsule(std::uint32_t index) noexcept {
    capsules_[index] = capsules_.back();
    capsules_.pop_back();
    finite_cells_.clear();
    forget_near_points();
}

std::uint32_t Statics::add(const BlockDef& block) {
    blocks_.push_back(block);
    flat_ = true;
    forget_near_points();
    return static_cast<std::uint32_t>(blocks_.size() - 1);
}

void Statics::remove_block(std::uint32_t index) noexcept {
    blocks_[index] = blocks_.back();
    blocks_.pop_back();
    flat_ = !planes_.empty() || !blocks_.empty();
    finite_cells_.clear();
    forget_near_points();
}

void Statics::remove_plane(std::uint32_t index) noexcept {
    planes_[index] = planes_.back();
    planes_.pop_back();
    flat_ = !planes_.empty() || !blocks_.empty();
}

void Statics::remove_cylinder(std::uint32_t index) noexcept {
    cylinders_[index] = cylinders_.back();
    cylinders_.pop_back();
}

void Statics::forget_near_points() {
    const std::lock_guard lock(near_points_lock_);
    near_points_.reset();
}

std::shared_ptr<const FiniteNear> Statics::finite_near_points(double radius) const {
    // A ball larger than anything the engine accepts has every static near it (and cells that
    // wide would overflow).
    if (!has_finite() || !(radius <= kMaxMagnitude)) return nullptr;
    const std::lock_guard lock(near_points_lock_);
    if (near_points_ && near_points_->reach >= radius) return near_points_;
    // Twice the radius asked, so that a few larger balls do not rebuild the lists each time.
    auto near = std::make_shared<FiniteNear>();
    near->reach = 2.0 * radius;
    // Cells as wide as the median static's longest side: most statics take a few cells each.
    std::vector<double> sizes;
    sizes.reserve(capsules_.size() + blocks_.size());
    near->lo = Vec3{INFINITY, INFINITY, INFINITY};
    near->hi = -near->lo;
    auto hold = [&](Vec3 lo, Vec3 hi) {
        sizes.push_back(std::max({hi.x - lo.x, hi.y - lo.y, hi.z - lo.z}));
        near->lo = lowest(near->lo, lo);
        near->hi = highest(near->hi, hi);
    };
    for (const Capsule& c : capsules_) {
        const Vec3 round{c.def.radius, c.def.radius, c.def.radius};
        hold(lowest(c.def.a, c.def.b) - round, highest(c.def.a, c.def.b) + round);
    }
    for (const BlockDef& b : blocks_) hold(b.min, b.max);
    const auto middle = sizes.begin() + static_cast<std::ptrdiff_t>(sizes.size() / 2);
    std::nth_element(sizes.begin(), middle, sizes.end());
    const double width = std::max(*middle, 4.0 * near->reach);
    near->coarse.configure(width, std::nullopt, {}, 0);
    // The cells' own rounding: a point may lie an ulp outside the cell its key names.
    near->cells.build(capsules_, blocks_, near->coarse, near->reach + 1e-9 * width);
    near_points_ = near;
    return near;
}

template <class Fn>
void Statics::for_each_finite(Vec3 p, double r, const FiniteNear* near, Fn&& fn) const {
    if (near && r <= near->reach) {
        near->cells.for_each(near->coarse.key_of(p), true, fn);
        return;
    }
    for (std::uint32_t k = 0; k < capsules_.size(); ++k) fn(Finite{false, k});
    for (std::uint32_t k = 0; k < blocks_.size(); ++k) fn(Finite{true, k});
}

std::string Statics::overlapped(Vec3 p, double r, const FiniteNear* near) const {
    for (std::size_t k = 0; k < planes_.size(); ++k)
        if (overlaps(planes_[k], p, r))
            return "overlaps planes[" + std::to_string(k) + "] by " + show(-clearance(planes_[k], p, r));
    for (std::size_t k = 0; k < cylinders_.size(); ++k)
        if (overlaps(cylinders_[k], p, r))
            return "overlaps cylinders[" + std::to_string(k) + "] by " + show(-clearance(cylinders_[k], p, r));
    // The first capsule, else the first block, whatever order the lists visit them in.
    constexpr std::uint32_t kNone = ~0u;
    std::uint32_t first[2] = {kNone, kNone};
    for_each_finite(p, r, near, [&](const Finite& f) {
        if (visit(f, [&](const auto& s) { return overlaps(s, p, r); })) first[f.block] = std::min(first[f.block], f.index);
    });
    if (first[0] != kNone)
        return "overlaps capsules[" + std::to_string(first[0]) + "] by " + show(-clearance(capsules_[first[0]], p, r));
    if (first[1] != kNone)
        return "overlaps blocks[" + std::to_string(first[1]) + "] by " + show(-clearance(blocks_[first[1]], p, r));
    return {};
}

double Statics::deepest_overlap(Vec3 p, double r, const FiniteNear* near) const {
    double worst = 0.0;
    for (const PlaneDef& plane : planes_) worst = std::max(worst, -clearance(plane, p, r));
    for (const CylinderDef& c : cylinders_) worst = std::max(worst, -clearance(c, p, r));
    for_each_finite(p, r, near, [&](const Finite& f) {
        worst = std::max(worst, -visit(f, [&](const auto& s) { return clearance(s, p, r); }));
    });
    return worst;
}

bool Statics::inside(Vec3 p, const FiniteNear* near) const {
    for (const PlaneDef& plane : planes_)
        if (height(plane, p) < 0.0) return true;
    for (const CylinderDef& c : cylinders_)
        if (length(from_axis(c, p)) < c.radius) return true;
    bool found = false;
    for_each_finite(p, 0.0, near, [&](const Finite& f) {
        found = found || visit(f, [&](const auto& s) { return clearance(s, p, 0.0) < 0.0; });
    });
    return found;
}

void FiniteCells::clear() {
    cells_.clear();
    members_.clear();
    everywhere_.clear();
}

void FiniteCells::build(std::span<const Capsule> capsules, std::span<const BlockDef> blocks, const Cells& space,
                        double reach) {
    // Built aside: a failure (out of memory) leaves the lists as they were.
    std::vector<std::pair<CellKey, std::uint32_t>> listed;
    std::vector<std::uint32_t> everywhere;
    std::vector<CellKey> near;
    // Lists the static in the cells within `margin` of it (`from`: from it to a point), given its
    // bounds.
    auto place = [&](const Finite& f, Vec3 lo, Vec3 hi, double margin, auto&& from) {
        lo = lo - Vec3{margin, margin, margin};
        hi = hi + Vec3{margin, margin, margin};
        const CellKey first = space.key_of(lo), last = space.key_of(hi);
        // Cells at the edge of the keys reach out to infinity: no centre to measure from.
        bool whole = true;
        double cells = 1.0;
        for (int d = 0; d < 3; ++d) {
            whole = whole && first[d] > -kKeyLimit && last[d] < kKeyLimit;
            cells *= static_cast<double>(last[d] - first[d] + 1);
        }
        near.clear();
        const bool few = whole && cells <= 64.0 * kMostCells;
        for (std::int64_t z = first.z; few && z <= last.z && near.size() <= kMostCells; ++z)
            for (std::int64_t y = first.y; y <= last.y; ++y)
                for (std::int64_t x = first.x; x <= last.x; ++x) {
                    const CellKey key{static_cast<std::int32_t>(x), static_cast<std::int32_t>(y),
                                      static_cast<std::int32_t>(z)};
                    Vec3 centre, half;
                    for (int d = 0; d < 3; ++d) {
                        const double b0 = space.bound(d, key[d]), b1 = space.bound(d, key[d] + 1);
                        set_axis(centre, d, 0.5 * (b0 + b1));
                        set_axis(half, d, 0.5 * (b1 - b0));
                    }
                    if (length(from(centre)) <= margin + length(half)) near.push_back(key);
                }
        if (!few || near.size() > kMostCells || listed.size() + near.size() > kMostListed) {
            everywhere.push_back(code(f));
            return;
        }
        for (const CellKey& key : near) listed.emplace_back(key, code(f));
    };
    for (std::uint32_t k = 0; k < capsules.size(); ++k) {
        const Capsule& c = capsules[k];
        place({false, k}, lowest(c.def.a, c.def.b), highest(c.def.a, c.def.b), c.def.radius + reach,
              [&](Vec3 p) { return from_segment(c, p); });
    }
    for (std::uint32_t k = 0; k < blocks.size(); ++k) {
        const BlockDef& b = blocks[k];
        place({true, k}, b.min, b.max, reach, [&](Vec3 p) { return from_block(b, p); });
    }
    std::sort(listed.begin(), listed.end(), [](const auto& p, const auto& q) {
        if (p.first.z != q.first.z) return p.first.z < q.first.z;
        if (p.first.y != q.first.y) return p.first.y < q.first.y;
        if (p.first.x != q.first.x) return p.first.x < q.first.x;
        return p.second < q.second;
    });
    std::unordered_map<CellKey, Range, Hash> cells;
    std::vector<std::uint32_t> members(listed.size());
    for (std::size_t m = 0; m < listed.size(); ++m) {
        members[m] = listed[m].second;
        const auto at = cells.try_emplace(listed[m].first, Range{static_cast<std::uint32_t>(m), 0}).first;
        at->second.end = static_cast<std::uint32_t>(m + 1);
    }
    cells_ = std::move(cells);
    members_ = std::move(members);
    everywhere_ = std::move(everywhere);
}

void Statics::save(SnapshotWriter& out) const {
    out.put(static_cast<std::uint64_t>(planes_.size()));
    for (const PlaneDef& p : planes_) { out.put(p.point); out.put(p.normal); }
    out.put(static_cast<std::uint64_t>(cylinders_.size()));
    for (const CylinderDef& c : cylinders_) { out.put(c.point); out.put(c.axis); out.put(c.radius); }
    out.put(static_cast<std::uint64_t>(capsules_.size()));
    for (const Capsule& c : capsules_) { out.put(c.def.a); out.put(c.def.b); out.put(c.def.radius); }
    out.put(static_cast<std::uint64_t>(blocks_.size()));
    for (const BlockDef& b : blocks_) { out.put(b.min); out.put(b.max); }
}

namespace {

// Statics are kept with unit directions (the world made them so when they were added).
void unit(Vec3 v, const char* what) {
    if (!(std::abs(length(v) - 1.0) <= 1e-12)) bad_snapshot(std::string(what) + " is not of unit length");
}

}  // namespace

StaticCounts Statics::restore(SnapshotReader& in, const WorldDef& def) {
    constexpr std::uint64_t kMaxStatics = 1u << 20;
    StaticCounts n;
    n.planes = in.count("plane count", kMaxStatics);
    for (std::size_t k = 0; k < n.planes; ++k) {
        PlaneDef p;
        p.point = in.finite_vec("plane point");
        p.normal = in.finite_vec("plane normal");
        if (periodic_axis_crossed(def, p) >= 0) bad_snapshot("a periodic world with a plane across a periodic axis");
        checked(p, "snapshot.planes[" + std::to_string(k) + "]");
        unit(p.normal, "plane normal");
        add(p);
    }
    n.cylinders = in.count("cylinder count", kMaxStatics);
    for (std::size_t k = 0; k < n.cylinders; ++k) {
        CylinderDef c;
        c.point = in.finite_vec("cylinder point");
        c.axis = in.finite_vec("cylinder axis");
        c.radius = in.finite("cylinder radius");
        if (periodic_axis_crossed(def, c) >= 0) bad_snapshot("a periodic world with a cylinder across a periodic axis");
        checked(c, "snapshot.cylinders[" + std::to_string(k) + "]");
        unit(c.axis, "cylinder axis");
        add(c);
    }
    n.capsules = in.count("capsule count", kMaxStatics);
    if (n.capsules > 0 && def.periodic) bad_snapshot("a periodic world with capsules");
    for (std::size_t k = 0; k < n.capsules; ++k) {
        CapsuleDef c;
        c.a = in.finite_vec("capsule end");
        c.b = in.finite_vec("capsule end");
        c.radius = in.finite("capsule radius");
        add(checked(c, "snapshot.capsules[" + std::to_string(k) + "]"));
    }
    n.blocks = in.count("block count", kMaxStatics);
    if (n.blocks > 0 && def.periodic) bad_snapshot("a periodic world with blocks");
    for (std::size_t k = 0; k < n.blocks; ++k) {
        BlockDef b;
        b.min = in.finite_vec("block corner");
        b.max = in.finite_vec("block corner");
        add(checked(b, "snapshot.blocks[" + std::to_string(k) + "]"));
    }
    return n;
}

}  // namespace ballistic::detail
