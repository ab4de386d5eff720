// Ballistic — the statics: one-sided infinite planes and infinite columns, stored with unit
// normals and axes, finite capsules, and the distances of a ball from them. Every distance to a
// static in the engine (prediction aside, which the time-of-impact kernels compute) is one of
// these functions. Capsules are also registered in the cells near them (CapsuleCells), so that a
// ball tests only the capsules it can reach from its cell.
#pragma once

#include "grid.hpp"

#include <ballistic/types.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace ballistic::detail {

// Signed distance of point p from the plane, positive on the side the balls live on.
inline double height(const PlaneDef& plane, Vec3 p) { return dot(plane.normal, p - plane.point); }
// The part of w across the column's axis.
inline Vec3 across(const CylinderDef& c, Vec3 w) { return w - c.axis * dot(w, c.axis); }
// From the axis to point p, perpendicular to the axis.
inline Vec3 from_axis(const CylinderDef& c, Vec3 p) { return across(c, p - c.point); }
// Clearance between a ball (centre p, radius r) and a static: the gap, negative when they overlap.
inline double clearance(const PlaneDef& plane, Vec3 p, double r) { return height(plane, p) - r; }
inline double clearance(const CylinderDef& c, Vec3 p, double r) { return length(from_axis(c, p)) - c.radius - r; }

// A capsule as the engine uses it: its definition, and the unit direction and length of its
// segment (u is zero for a sphere, a == b).
struct Capsule {
    CapsuleDef def;
    Vec3 u;
    double length = 0.0;
};
// From the segment's nearest point to point p.
inline Vec3 from_segment(const Capsule& c, Vec3 p) {
    const Vec3 w = p - c.def.a;
    if (!(c.length > 0.0)) return w;
    const double s = dot(w, c.u);
    if (s <= 0.0) return w;
    if (s >= c.length) return p - c.def.b;
    return w - c.u * s;
}
inline double clearance(const Capsule& c, Vec3 p, double r) { return length(from_segment(c, p)) - c.def.radius - r; }

// Touching (within this fraction of the contact distance) is allowed at creation: a Newton's
// cradle is built from exactly touching balls, and decimal inputs round.
inline constexpr double kTouchTolerance = 1e-12;
// Does a ball at p of radius r overlap the static by more than touching allows?
inline bool overlaps(const PlaneDef& plane, Vec3 p, double r) { return clearance(plane, p, r) < -kTouchTolerance * r; }
inline bool overlaps(const CylinderDef& c, Vec3 p, double r) {
    return clearance(c, p, r) < -kTouchTolerance * (r + c.radius);
}
inline bool overlaps(const Capsule& c, Vec3 p, double r) {
    return clearance(c, p, r) < -kTouchTolerance * (r + c.def.radius);
}

// The axis that wraps which a static crosses, or -1. A ball wrapping around that axis would come
// back behind the static, which has no periodic images: a plane of a periodic world must be
// parallel to every axis that wraps (its normal along the others), and a column must lie along
// the one axis that wraps (a pipe periodic along its length). -1 without a periodic box.
inline int periodic_axis_crossed(const WorldDef& def, const PlaneDef& plane) {
    if (!def.periodic) return -1;
    const double n[3] = {plane.normal.x, plane.normal.y, plane.normal.z};
    for (int d = 0; d < 3; ++d)
        if (def.periodic_axes[static_cast<std::size_t>(d)] && n[d] != 0.0) return d;
    return -1;
}
inline int periodic_axis_crossed(const WorldDef& def, const CylinderDef& column) {
    if (!def.periodic) return -1;
    const double a[3] = {column.axis.x, column.axis.y, column.axis.z};
    for (int d = 0; d < 3; ++d) {
        if (!def.periodic_axes[static_cast<std::size_t>(d)]) continue;
        for (int e = 0; e < 3; ++e)
            if (e != d && a[e] != 0.0) return d;
    }
    return -1;
}

// The capsules a ball may touch from each cell: a capsule is listed in every cell whose centre
// lies within its radius, `reach` and half the cell's diagonal of its segment, so a ball of
// radius up to `reach` in that cell can touch no other. A capsule that would take more than
// kMostCells cells is listed once, for every cell (`everywhere`): memory stays bounded by the
// capsule count.
class CapsuleCells {
public:
    static constexpr std::size_t kMostCells = 1024;
    // For the cells of `grid` (which must not be periodic); empty when `capsules` is.
    void build(std::span<const Capsule> capsules, const Grid& grid, double reach);
    void clear();
    // fn(k) for every capsule listed in cell `key`, then (with `everywhere`) for the others.
    template <class Fn>
    void for_each(const CellKey& key, bool everywhere, Fn&& fn) const {
        if (!cells_.empty()) {
            if (const auto found = cells_.find(key); found != cells_.end())
                for (std::uint32_t m = found->second.begin; m < found->second.end; ++m) fn(members_[m]);
        }
        if (everywhere)
            for (const std::uint32_t k : everywhere_) fn(k);
    }
    std::size_t bytes() const;

private:
    struct Hash {
        std::size_t operator()(const CellKey& k) const noexcept {
            return static_cast<std::size_t>((static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.x)) * 0x9E3779B97F4A7C15ull) ^
                                            (static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.y)) * 0xC2B2AE3D27D4EB4Full) ^
                                            (static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.z)) * 0x165667B19E3779F9ull));
        }
    };
    struct Range {
        std::uint32_t begin, end;  // in members_
    };
    std::unordered_map<CellKey, Range, Hash> cells_;
    std::vector<std::uint32_t> members_;
    std::vector<std::uint32_t> everywhere_;
};

// Invariant: every normal and axis is unit length; statics are only ever added.
class Statics {
public:
    // The definition checked (errors name "<field>.point", ".normal", ".axis", ".radius") and
    // made unit length.
    static PlaneDef checked(const PlaneDef& def, const std::string& field);
    static CylinderDef checked(const CylinderDef& def, const std::string& field);
    static Capsule checked(const CapsuleDef& def, const std::string& field);

    std::uint32_t add(const PlaneDef& unit);  // returns its index
    std::uint32_t add(const CylinderDef& unit);
    std::uint32_t add(const Capsule& capsule);  // then index_capsules() before predicting
    // Removes the static at `index`; the last of its kind takes its index.
    void remove_plane(std::uint32_t index) noexcept;
    void remove_cylinder(std::uint32_t index) noexcept;
    void remove_capsule(std::uint32_t index) noexcept;  // then index_capsules() before predicting

    const std::vector<PlaneDef>& planes() const { return planes_; }
    const std::vector<CylinderDef>& cylinders() const { return cylinders_; }
    const std::vector<Capsule>& capsules() const { return capsules_; }
    bool empty() const { return planes_.empty() && cylinders_.empty() && capsules_.empty(); }
    // Lists the capsules in the cells of `grid` for balls of radius up to `largest`; the
    // predictions and contacts read the lists (capsules_near()).
    void index_capsules(const Grid& grid, double largest) { capsule_cells_.build(capsules_, grid, largest); }
    // fn(k) for every capsule a ball in cell `key` may touch; `everywhere` false leaves out those
    // listed for every cell (a ball that only crossed into `key` tested them already).
    template <class Fn>
    void capsules_near(const CellKey& key, Fn&& fn, bool everywhere = true) const {
        capsule_cells_.for_each(key, everywhere, fn);
    }

    // The first static a ball overlaps by more than kTouchTolerance: "overlaps planes[k] by d",
    // or empty.
    std::string overlapped(Vec3 p, double r) const;
    // The deepest overlap of a ball with any static (0 when it overlaps none).
    double deepest_overlap(Vec3 p, double r) const;
    // Is point p behind a plane or inside a column?
    bool inside(Vec3 p) const;

private:
    std::vector<PlaneDef> planes_;
    std::vector<CylinderDef> cylinders_;
    std::vector<Capsule> capsules_;
    CapsuleCells capsule_cells_;
};

}  // namespace ballistic::detail
