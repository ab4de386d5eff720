// Ballistic — a vector's components by index.
#pragma once

#include <ballistic/vec3.hpp>

namespace ballistic::detail {

// Component d (0, 1, 2) of a vector.
inline double axis(Vec3 v, int d) { return d == 0 ? v.x : (d == 1 ? v.y : v.z); }
inline void set_axis(Vec3& v, int d, double value) { (d == 0 ? v.x : (d == 1 ? v.y : v.z)) = value; }

}  // namespace ballistic::detail
