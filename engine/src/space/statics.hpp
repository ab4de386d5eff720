// Ballistic — the statics: one-sided infinite planes and infinite columns, stored with unit
// normals and axes, finite capsules, and the distances of a ball from them. Every distance to a
// static in the engine (prediction aside, which the time-of-impact kernels compute) is one of
// these functions. Capsules and blocks are also listed in the cells near them (FiniteCells), so
// that a ball tests only those it can reach from its cell.
#pragma once

#include "space/cells.hpp"

#include <ballistic/types.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
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
// From the block's nearest point to point p (zero inside it).
inline Vec3 from_block(const BlockDef& b, Vec3 p) {
    return p - Vec3{std::clamp(p.x, b.min.x, b.max.x), std::clamp(p.y, b.min.y, b.max.y),
                    std::clamp(p.z, b.min.z, b.max.z)};
}
// Negative inside: minus the depth below the nearest face.
inline double clearance(const BlockDef& b, Vec3 p, double r) {
    const Vec3 w = from_block(b, p);
    if (!(w == Vec3{})) return length(w) - r;
    const double depth = std::min({p.x - b.min.x, b.max.x - p.x, p.y - b.min.y, b.max.y - p.y, p.z - b.min.z,
                                   b.max.z - p.z});
    return -depth - r;
}

// The most capsules, and the most blocks, a world holds (as many as a snapshot reads back); their
// indices then fit the codes below.
inline constexpr std::size_t kMostFinite = std::size_t{1} << 20;
// The most planes and cylinders together: every prediction tests each of them.
inline constexpr std::size_t kMostInfinite = std::size_t{1} << 12;

// What a ball rests on (Supports, balls.hpp): a plane by its index (≥ 0), or a block's face, coded
// −2 − (6 block + face) with face = 2 axis + 1 for the upper face (−1 is kNoSupport: nothing).
inline std::int32_t face_support(std::uint32_t block, int face) {
    return -2 - static_cast<std::int32_t>(6 * block + static_cast<std::uint32_t>(face));
}
inline bool is_face(std::int32_t support) { return support <= -2; }
inline std::uint32_t face_block(std::int32_t support) { return static_cast<std::uint32_t>(-2 - support) / 6; }
// Is the support a face of that block?
inline bool on_face_of(std::int32_t support, std::uint32_t block) {
    return is_face(support) && face_block(support) == block;
}
inline int face_index(std::int32_t support) { return static_cast<int>(static_cast<std::uint32_t>(-2 - support) % 6); }
// The plane a support lies in: a plane itself, or the plane of a block's face (outward normal).
struct SupportPlanes {
    const std::vector<PlaneDef>& planes;
    std::span<const BlockDef> blocks;
    PlaneDef operator[](std::int32_t support) const {
        if (support >= 0) return planes[static_cast<std::size_t>(support)];
        const BlockDef& b = blocks[face_block(support)];
        const int face = face_index(support), d = face / 2;
        const bool upper = (face & 1) != 0;
        Vec3 n;
        set_axis(n, d, upper ? 1.0 : -1.0);
        return {upper ? b.max : b.min, n};
    }
};

// A finite static (a capsule or a block) by its index.
struct Finite {
    bool block = false;
    std::uint32_t index = 0;
};
// Where a ball at p touches a finite static: from the static's nearest point (its segment's, for
// a capsule) to p, and the static's radius around that point (0 for a block).
struct Nearest {
    Vec3 w;
    double radius = 0.0;
};

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
inline bool overlaps(const BlockDef& b, Vec3 p, double r) { return clearance(b, p, r) < -kTouchTolerance * r; }

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

// The finite statics a ball may touch from each cell: a capsule or a block is listed in every cell
// whose centre lies within `reach` and half the cell's diagonal of it, so a ball of radius up to
// `reach` in that cell can touch no other. One that would take more than kMostCells cells, or
// push the lists past kMostListed entries, is listed once, for every cell (`everywhere`): memory
// stays bounded by the count of statics.
class FiniteCells {
public:
    static constexpr std::size_t kMostCells = 1024;
    static constexpr std::size_t kMostListed = std::size_t{1} << 24;
    // For the cells of `space` (which must not be periodic); empty without finite statics.
    void build(std::span<const Capsule> capsules, std::span<const BlockDef> blocks, const Cells& space, double reach);
    void clear();
    // fn(Finite) for every static listed in cell `key`, then (with `everywhere`) for the others.
    template <class Fn>
    void for_each(const CellKey& key, bool everywhere, Fn&& fn) const {
        if (!cells_.empty()) {
            if (const auto found = cells_.find(key); found != cells_.end())
                for (std::uint32_t m = found->second.begin; m < found->second.end; ++m) fn(decode(members_[m]));
        }
        if (everywhere)
            for (const std::uint32_t code : everywhere_) fn(decode(code));
    }

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
    // A static's code: its index times two, plus one for a block.
    static std::uint32_t code(const Finite& f) { return f.index << 1 | static_cast<std::uint32_t>(f.block); }
    static Finite decode(std::uint32_t code) { return {(code & 1u) != 0, code >> 1}; }
    std::unordered_map<CellKey, Range, Hash> cells_;
    std::vector<std::uint32_t> members_;
    std::vector<std::uint32_t> everywhere_;
};

// The capsules and blocks listed in cells of their own, for the questions asked of any point
// (which statics does a ball there overlap?) between steps, when placing balls and measuring:
// each question tests the statics near the point, not all of them.
struct FiniteNear {
    Cells coarse;        // cells as wide as most statics are long, and at least four reaches
    FiniteCells cells;  // built for balls of radius up to `reach`
    double reach = 0.0;
    Vec3 lo, hi;        // the box that holds every capsule and block
};

class SnapshotReader;
class SnapshotWriter;

// How many statics of each kind a world holds (what the parts of a snapshot after them check
// their indices against).
struct StaticCounts {
    std::size_t planes = 0, cylinders = 0, capsules = 0, blocks = 0;
};

// Invariant: every normal and axis is unit length; the capsules' and blocks' lists in the cells
// are rebuilt (index_finite()) before the next prediction after any of them changes.
class Statics {
public:
    // The definition checked (errors name "<field>.point", ".normal", ".axis", ".radius") and
    // made unit length.
    static PlaneDef checked(const PlaneDef& def, const std::string& field);
    static CylinderDef checked(const CylinderDef& def, const std::string& field);
    static Capsule checked(const CapsuleDef& def, const std::string& field);
    static BlockDef checked(const BlockDef& def, const std::string& field);

    std::uint32_t add(const PlaneDef& unit);  // returns its index
    std::uint32_t add(const CylinderDef& unit);
    std::uint32_t add(const Capsule& capsule);  // then index_finite() before predicting
    std::uint32_t add(const BlockDef& block);   // then index_finite() before predicting
    // Removes the static at `index`; the last of its kind takes its index.
    void remove_plane(std::uint32_t index) noexcept;
    void remove_cylinder(std::uint32_t index) noexcept;
    void remove_capsule(std::uint32_t index) noexcept;  // then index_finite() before predicting
    void remove_block(std::uint32_t index) noexcept;    // then index_finite() before predicting

    const std::vector<PlaneDef>& planes() const { return planes_; }
    const std::vector<CylinderDef>& cylinders() const { return cylinders_; }
    const std::vector<Capsule>& capsules() const { return capsules_; }
    const std::vector<BlockDef>& blocks() const { return blocks_; }
    SupportPlanes supports() const { return {planes_, blocks_}; }
    // Is there a plane or a block, something a ball can rest on as on a plane?
    bool flat() const { return flat_; }
    bool has_finite() const { return !capsules_.empty() || !blocks_.empty(); }
    bool empty() const { return planes_.empty() && cylinders_.empty() && !has_finite(); }
    StaticCounts counts() const { return {planes_.size(), cylinders_.size(), capsules_.size(), blocks_.size()}; }

    // Snapshots: every static; restore() adds them to an empty set, each checked as World::add_*
    // checks it (and as `def`, a periodic world, allows).
    void save(SnapshotWriter& out) const;
    StaticCounts restore(SnapshotReader& in, const WorldDef& def);
    // Lists the capsules and blocks in the cells of `space` for balls of radius up to `largest`;
    // the predictions and contacts read the lists (finite_near()).
    void index_finite(const Cells& space, double largest) { finite_cells_.build(capsules_, blocks_, space, largest); }
    // fn(Finite) for every capsule and block a ball in cell `key` may touch; `everywhere` false
    // leaves out those listed for every cell (a ball that only crossed into `key` tested them).
    template <class Fn>
    void finite_near(const CellKey& key, Fn&& fn, bool everywhere = true) const {
        if (has_finite()) finite_cells_.for_each(key, everywhere, fn);
    }
    Nearest nearest(const Finite& f, Vec3 p) const {
        if (f.block) return {from_block(blocks_[f.index], p), 0.0};
        const Capsule& c = capsules_[f.index];
        return {from_segment(c, p), c.def.radius};
    }

    // The lists the questions below read for balls of radius up to `radius`: built (under a lock,
    // so const callers may share them) by the first question after the capsules or blocks
    // change, or for a larger radius; null without capsules and blocks, or for a radius beyond
    // kMaxMagnitude (then every static is tested).
    std::shared_ptr<const FiniteNear> finite_near_points(double radius) const;
    // The questions, each testing the planes and columns and the capsules and blocks `near` lists
    // (every one when `near` is null or built for smaller balls); the answers do not depend on it.
    // The first static a ball overlaps by more than kTouchTolerance: "overlaps planes[k] by d",
    // or empty.
    std::string overlapped(Vec3 p, double r, const FiniteNear* near = nullptr) const;
    // The deepest overlap of a ball with any static (0 when it overlaps none).
    double deepest_overlap(Vec3 p, double r, const FiniteNear* near = nullptr) const;
    // Is point p behind a plane or inside a column, a capsule or a block?
    bool inside(Vec3 p, const FiniteNear* near = nullptr) const;

private:
    std::vector<PlaneDef> planes_;
    std::vector<CylinderDef> cylinders_;
    std::vector<Capsule> capsules_;
    std::vector<BlockDef> blocks_;
    bool flat_ = false;  // planes or blocks
    FiniteCells finite_cells_;
    // fn(Finite) for each capsule and block a ball at p of radius r may overlap.
    template <class Fn>
    void for_each_finite(Vec3 p, double r, const FiniteNear* near, Fn&& fn) const;
    // fn(the Capsule or the BlockDef f names).
    template <class Fn>
    auto visit(const Finite& f, Fn&& fn) const {
        return f.block ? fn(blocks_[f.index]) : fn(capsules_[f.index]);
    }
    void forget_near_points();  // after any change of the capsules or blocks
    mutable std::mutex near_points_lock_;
    mutable std::shared_ptr<const FiniteNear> near_points_;
};

}  // namespace ballistic::detail
