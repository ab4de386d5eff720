// Ballistic — the checks every entry point makes of its input. Each failure throws
// InvalidArgument whose field is the dotted path of the value and whose message reads
// "<field>: <what is wrong>, got <value>", the value in shortest round-trip form.
#pragma once

#include "base/format.hpp"

#include <ballistic/types.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

namespace ballistic::detail {

[[noreturn]] inline void reject(const std::string& field, const std::string& what) {
    throw InvalidArgument(field, field + ": " + what);
}

// A field's name: a string, or a function that makes it, for checks of many items whose names
// are only made when one fails.
template <class Name>
std::string name_of(const Name& name) {
    if constexpr (std::is_invocable_v<const Name&>) return name();
    else return name;
}

// Every length, speed, acceleration, time and mass given to the engine stays within this
// magnitude: the time-of-impact polynomials multiply up to four of them, which then stays far
// from overflow (a ball at 1e308 would silently pass through everything).
inline constexpr double kMaxMagnitude = 1e30;

// Finite and within kMaxMagnitude (every component of a vector).
template <class Name, class Value>
void require_finite(const Name& field, Value value) {
    bool finite, bounded;
    if constexpr (std::is_same_v<Value, Vec3>) {
        finite = is_finite(value);
        bounded = std::max({std::abs(value.x), std::abs(value.y), std::abs(value.z)}) <= kMaxMagnitude;
    } else {
        finite = std::isfinite(value);
        bounded = std::abs(value) <= kMaxMagnitude;
    }
    if (!finite) reject(name_of(field), "must be finite, got " + show(value));
    if (!bounded)
        reject(name_of(field), "must be at most " + show(kMaxMagnitude) +
                                   " in magnitude (the limit that keeps the arithmetic from overflowing), got " +
                                   show(value));
}

template <class Name>
void require_positive(const Name& field, double value) {
    require_finite(field, value);
    if (!(value > 0.0)) reject(name_of(field), "must be > 0, got " + show(value));
}

template <class Name>
void require_non_negative(const Name& field, double value) {
    require_finite(field, value);
    if (!(value >= 0.0)) reject(name_of(field), "must be >= 0, got " + show(value));
}

inline void require_nonzero(const std::string& field, Vec3 v) {
    require_finite(field, v);
    if (!(length(v) > 0.0))
        reject(field, "must give a direction: not the zero vector, nor so short that its squared length underflows "
                      "(below about 1e-154), got " + show(v));
}

// A box's corners are checked as "<field>.min" and "<field>.max"; their order is reported under
// `order_field`.
inline void require_box(const std::string& field, const Box& box, const std::string& order_field) {
    require_finite(field + ".min", box.min);
    require_finite(field + ".max", box.max);
    if (!(box.min.x < box.max.x && box.min.y < box.max.y && box.min.z < box.max.z))
        reject(order_field, "min must be below max on every axis, got min " + show(box.min) + " and max " + show(box.max));
}

}  // namespace ballistic::detail
