// Ballistic — islands for sleeping: clusters of touching quiet balls (union–find over slots) and
// the test whether non-negative contact forces can hold a cluster's weight (sleep.cpp uses it).
#pragma once

#include <ballistic/vec3.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace ballistic::detail {

inline constexpr std::uint32_t kFixed = ~0u;  // the other body of a contact is a static or asleep

struct IslandContact {
    std::uint32_t a, b;  // b = kFixed: a static or a sleeping ball
    Vec3 n;              // unit, the direction the contact pushes b (or a, when b is fixed)
};

// Scratch kept between steps, sized by the slot count.
struct Islands {
    std::vector<std::uint32_t> parent;  // per slot: union–find parent, kFixed if not a candidate
    std::vector<std::uint32_t> local;   // per slot: index among its island's members
    std::vector<std::uint32_t> candidates;
    std::vector<char> disturbed;        // per slot: an awake ball that is not quiet is under it
    std::vector<IslandContact> contacts, sorted;
    std::vector<Vec3> residual;
    std::vector<double> weight, force;  // per member; per contact

    std::uint32_t root(std::uint32_t slot) {
        while (parent[slot] != slot) slot = parent[slot] = parent[parent[slot]];
        return slot;
    }
    // Solves for contact forces >= 0 balancing the weight under `gravity` of every member (slots
    // whose `local` index is set; masses from `inv_mass`) by weighted projected Gauss–Seidel, a
    // bounded number of sweeps. True if every member's unbalanced force is within 1 % of its
    // weight.
    bool balanced(std::span<const std::uint32_t> members, std::span<const IslandContact> touching,
                  const std::vector<double>& inv_mass, Vec3 gravity);
};

}  // namespace ballistic::detail
