// Ballistic — the statics: one-sided infinite planes and infinite columns, stored with unit
// normals and axes, and the distances of a ball from them. Every distance to a static in the
// engine (prediction aside, which the time-of-impact kernels compute) is one of these functions.
#pragma once

#include <ballistic/types.hpp>

#include <cstdint>
#include <string>
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

// Touching (within this fraction of the contact distance) is allowed at creation: a Newton's
// cradle is built from exactly touching balls, and decimal inputs round.
inline constexpr double kTouchTolerance = 1e-12;
// Does a ball at p of radius r overlap the static by more than touching allows?
inline bool overlaps(const PlaneDef& plane, Vec3 p, double r) { return clearance(plane, p, r) < -kTouchTolerance * r; }
inline bool overlaps(const CylinderDef& c, Vec3 p, double r) {
    return clearance(c, p, r) < -kTouchTolerance * (r + c.radius);
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

// Invariant: every normal and axis is unit length; statics are only ever added.
class Statics {
public:
    // The definition checked (errors name "<field>.point", ".normal", ".axis", ".radius") and
    // made unit length.
    static PlaneDef checked(const PlaneDef& def, const std::string& field);
    static CylinderDef checked(const CylinderDef& def, const std::string& field);

    std::uint32_t add(const PlaneDef& unit);  // returns its index
    std::uint32_t add(const CylinderDef& unit);
    // Removes the static at `index`; the last of its kind takes its index.
    void remove_plane(std::uint32_t index) noexcept;
    void remove_cylinder(std::uint32_t index) noexcept;

    const std::vector<PlaneDef>& planes() const { return planes_; }
    const std::vector<CylinderDef>& cylinders() const { return cylinders_; }
    bool empty() const { return planes_.empty() && cylinders_.empty(); }

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
};

}  // namespace ballistic::detail
