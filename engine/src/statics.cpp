// Ballistic — the statics (statics.hpp).
#include "statics.hpp"

#include "validate.hpp"

#include <algorithm>

namespace ballistic::detail {

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

std::uint32_t Statics::add(const PlaneDef& unit) {
    planes_.push_back(unit);
    return static_cast<std::uint32_t>(planes_.size() - 1);
}

std::uint32_t Statics::add(const CylinderDef& unit) {
    cylinders_.push_back(unit);
    return static_cast<std::uint32_t>(cylinders_.size() - 1);
}

void Statics::remove_plane(std::uint32_t index) noexcept {
    planes_[index] = planes_.back();
    planes_.pop_back();
}

void Statics::remove_cylinder(std::uint32_t index) noexcept {
    cylinders_[index] = cylinders_.back();
    cylinders_.pop_back();
}

std::string Statics::overlapped(Vec3 p, double r) const {
    for (std::size_t k = 0; k < planes_.size(); ++k)
        if (overlaps(planes_[k], p, r))
            return "overlaps planes[" + std::to_string(k) + "] by " + show(-clearance(planes_[k], p, r));
    for (std::size_t k = 0; k < cylinders_.size(); ++k)
        if (overlaps(cylinders_[k], p, r))
            return "overlaps cylinders[" + std::to_string(k) + "] by " + show(-clearance(cylinders_[k], p, r));
    return {};
}

double Statics::deepest_overlap(Vec3 p, double r) const {
    double worst = 0.0;
    for (const PlaneDef& plane : planes_) worst = std::max(worst, -clearance(plane, p, r));
    for (const CylinderDef& c : cylinders_) worst = std::max(worst, -clearance(c, p, r));
    return worst;
}

bool Statics::inside(Vec3 p) const {
    for (const PlaneDef& plane : planes_)
        if (height(plane, p) < 0.0) return true;
    for (const CylinderDef& c : cylinders_)
        if (length(from_axis(c, p)) < c.radius) return true;
    return false;
}

}  // namespace ballistic::detail
