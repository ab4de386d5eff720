// Ballistic — numbers in error messages: shortest round-trip form, so the value the user
// gave is the value they read back.
#pragma once

#include <ballistic/vec3.hpp>

#include <charconv>
#include <string>

namespace ballistic::detail {

inline std::string show(double value) {
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, value).ptr;
    return std::string(text, end);
}

inline std::string show(Vec3 v) { return "[" + show(v.x) + ", " + show(v.y) + ", " + show(v.z) + "]"; }

}  // namespace ballistic::detail
