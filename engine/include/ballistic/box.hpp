// Ballistic — an axis-aligned box.
#pragma once

#include <ballistic/vec3.hpp>

namespace ballistic {

// Axis-aligned box, min < max on every axis.
struct Box {
    Vec3 min;  // (unit: length)
    Vec3 max;  // (unit: length)
};

}  // namespace ballistic
