// Ballistic — islands for sleeping: clusters of touching quiet balls (union–find over slots) and
// the test whether non-negative contact forces can hold a cluster's weight (sleep.cpp uses it).
#pragma once

#include <ballistic/vec3.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace ballistic::detail {

inline constexpr std::uint32_t kFixed = ~0u;  // the other body of a contact is a static or asleep

struct IslandContact {
    std::uint32_t a, b;  // b = kFixed: a static or a sleeping ball
    Vec3 n;              // unit, the direction the contact pushes b (or a, when b is fixed)
};

// The friction force of a contact with unit normal n, f + step without its part along n, within
// the cone |f| <= most.
Vec3 within_cone(Vec3 f, Vec3 step, Vec3 n, double most);
// One projected Gauss–Seidel step of a contact with a fixed body: its push (>= 0, along the unit
// normal n) and, with `friction` > 0, its hold (in the tangent plane, within Coulomb's cone)
// reduce the residual force on the ball.
void push_and_hold(Vec3& residual, Vec3 n, double& push, Vec3& hold, double friction);
// Can fixed contacts with these unit normals (at most 32 count), each pushing and holding within
// `friction`, cancel `load` on one ball, to 1 %?
bool holds(Vec3 load, const Vec3* normals, std::size_t count, double friction);

// Scratch kept between steps, sized by the slot count.
struct Islands {
    std::vector<std::uint32_t> parent;  // per slot: union–find parent, kFixed if not a candidate
    std::vector<double> height;         // per slot: along -gravity, for carry_down() (none: no guess)
    bool clean = false;                 // `parent` is kFixed for every slot (between tests of sleeping)
    std::vector<std::uint32_t> local;   // per slot: index among its island's members
    std::vector<std::uint32_t> candidates;
    std::vector<std::uint32_t> awake;   // Sleep::sleep_clusters() over every awake ball: their slots
    std::vector<char> disturbed;        // per slot: an awake ball that is not quiet is under it
    std::vector<char> still;            // per slot: held in place (Sleep::still()): counts as balanced
    std::vector<IslandContact> contacts, sorted;
    std::vector<Vec3> residual;
    std::vector<double> weight, force;  // per member; per contact
    std::vector<Vec3> holding;          // per contact: its friction force
    // Per contact: the forces before a sweep (balanced()) or those a solve reached (stand()), and
    // the direction a sped-up solve moves them on.
    std::vector<double> last_force, step_force;
    std::vector<Vec3> last_holding, step_holding;
    std::vector<char> lifted;           // per member: on a moving ball (on_moving())
    std::vector<std::uint32_t> first_resting, resting, stack;
    std::vector<std::uint32_t> kept, kept_next;           // stand(): the members still in the balance
    std::vector<std::uint32_t> first_contact, by_contact;  // carry_down(): contacts per member
    std::vector<std::uint32_t> by_height;                  // stand(): its members' slots, highest first
    std::vector<IslandContact> kept_contacts, contacts_next;
    std::vector<std::uint32_t> asleep_now, rest_of;  // the balls falling asleep, their entries of rests

    // A solver of its own for part of another's clusters (Sleep::stand_clusters() on several
    // tasks) reads and writes that one's per-slot vectors (local, height, disturbed, still), each
    // only for its clusters' members; nullptr: its own.
    Islands* owner = nullptr;
    Islands& slots() { return owner ? *owner : *this; }

    std::uint32_t root(std::uint32_t slot) {
        while (parent[slot] != slot) slot = parent[slot] = parent[parent[slot]];
        return slot;
    }
    // Solves for contact forces balancing the weight under `gravity` of every member (slots
    // whose `local` index is set; masses from `inv_mass`) by weighted projected Gauss–Seidel, a
    // bounded number of sweeps: each contact pushes (normal force >= 0) and, with `friction` > 0,
    // holds along its tangent plane with at most `friction` times its normal force (Coulomb's
    // cone). True if every member's unbalanced force is within 1 % of its weight. The sweeps
    // (at most 200) start from the forces in `force` and `holding` (one per contact: carry_down()'s
    // guess, or those a solve before reached), from which it sets `residual` first.
    // `give_up`: return false early, setting `gave_up`, once the sweeps have stopped reducing the
    // unbalanced forces while some member is clearly unbalanced (clearly_unbalanced()); such a
    // solve over many contacts is sped up (islands.cpp).
    bool balanced(std::span<const std::uint32_t> members, std::span<const IslandContact> touching,
                  std::span<const double> inv_mass, Vec3 gravity, double friction = 0.0, bool give_up = false);
    // Sets `residual` (and `weight`) to what the forces in `force` and `holding` leave unbalanced
    // on each member; returns unbalance().
    double leave(std::span<const std::uint32_t> members, std::span<const IslandContact> touching,
                 std::span<const double> inv_mass, Vec3 gravity);
    // The weighted sum of the squared residuals of the first m members.
    double unbalance(std::size_t m) const;
    // A first guess of the contact forces for balanced(): sets `force` and `holding` (one
    // per contact) to none and then, when `height` (per slot) is set, lets each member, from the
    // highest down (in the order of `by_height`, which may hold other slots too), pass what is
    // unbalanced on it, its weight (none for a `still` member, as in balanced()) and the pushes
    // of the members above, to the contacts that push it up (`holding` stays zero). A column or
    // a regular pile is then balanced at once; projected Gauss–Seidel alone spreads a weight
    // down one contact per sweep, and a column of 12 balls was not balanced in 200 sweeps.
    void carry_down(std::span<const std::uint32_t> members, std::span<const IslandContact> touching,
                    std::span<const double> inv_mass, Vec3 gravity);
    bool gave_up = false;
    std::uint64_t sweeps = 0;  // every sweep of every solve: the work of the balance
    // After balanced(): is member k's unbalanced force above 1 % of its weight? Above 10 %? A
    // member that `still` marks never is (its weight counts 0): collisions hold it where it is.
    bool unbalanced(std::size_t k) const;
    bool clearly_unbalanced(std::size_t k) const;
    bool unbalanced_by(std::size_t k, double fraction) const;
    // One projected Gauss–Seidel sweep over the contacts (balanced()).
    void sweep_once(std::span<const IslandContact> touching, double friction);
    // After a sweep of an accelerated solve, the forces moved on along the last steps' direction
    // (islands.cpp, balanced()); `stepped` is the last sweep's squared step, and the new one is
    // returned (0: the direction starts over).
    double move_on(std::span<const std::uint32_t> members, std::span<const IslandContact> touching,
                   std::span<const double> inv_mass, Vec3 gravity, double friction, double stepped);
    // Appends to `asleep_now` the members of a cluster that stand. The cluster is balanced
    // (balanced(), from carry_down()'s guess); when it is not, the members left unbalanced and
    // every member resting on them (on_moving()) stay awake and the balance is solved again for
    // the rest. A solve that has stopped making progress while some members are clearly
    // unbalanced ends there, and only those (and the members resting on them) are set aside; one
    // that runs its sweeps out sets aside every member left unbalanced. The next solve starts
    // from the forces reached or from a new guess, whichever leaves less unbalanced: the forces
    // reached still carry the load of the members set aside (a column under a ball that slid off
    // its top ran every round out from them), a new guess throws away what the sweeps found (a
    // 10⁴-ball pile loaded from a file ran its rounds out from new guesses and did not sleep). No
    // solve starts once kStandSweeps sweeps have run (a sped-up sweep counts as one), nor after
    // kRounds solves; then nothing of the cluster stands. Of a balanced part, the members on a
    // moving ball and those resting on them stay awake (on_moving()); the rest stands. Contacts
    // with a member that stays awake carry nothing. A cluster of which on_moving() lifts every
    // member is not solved: nothing of it stands.
    static constexpr std::uint64_t kStandSweeps = 1000;
    static constexpr int kRounds = 16;
    template <class Above>
    void stand(std::span<const std::uint32_t> members, std::span<const IslandContact> touching,
               std::span<const double> inv_mass, Vec3 gravity, double friction, Above&& above) {
        Islands& at = slots();
        // Every member on a moving ball, or resting on one through the others: none stands,
        // whatever the balance (on_moving() lifts them at the end of every round), so no solve.
        if (std::any_of(members.begin(), members.end(), [&](std::uint32_t s) { return at.disturbed[s] != 0; })) {
            on_moving(members, touching, above);
            if (std::all_of(lifted.begin(), lifted.end(), [](char up) { return up != 0; })) return;
        }
        kept.assign(members.begin(), members.end());
        kept_contacts.assign(touching.begin(), touching.end());
        const std::uint64_t start = sweeps;
        by_height.clear();
        if (!at.height.empty()) {  // the members from the highest down, ties by slot (the same order on every run)
            by_height.assign(members.begin(), members.end());
            std::sort(by_height.begin(), by_height.end(), [&](std::uint32_t x, std::uint32_t y) {
                return at.height[x] != at.height[y] ? at.height[x] > at.height[y] : x < y;
            });
        }
        carry_down(kept, kept_contacts, inv_mass, gravity);
        for (int round = 1;; ++round) {
            if (balanced(kept, kept_contacts, inv_mass, gravity, friction, true)) break;
            if (sweeps - start >= kStandSweeps || round == kRounds) return;
            for (std::size_t k = 0; k < kept.size(); ++k)  // never a still one: balanced() passed them
                if (gave_up ? clearly_unbalanced(k) : unbalanced(k)) at.disturbed[kept[k]] = 1;
            on_moving(kept, kept_contacts, above);
            kept_next.clear();
            contacts_next.clear();
            last_force.clear();  // the forces reached, of the contacts kept
            last_holding.clear();
            for (std::size_t k = 0; k < kept_contacts.size(); ++k) {
                const IslandContact& ct = kept_contacts[k];
                if (lifted[at.local[ct.a]] || (ct.b != kFixed && lifted[at.local[ct.b]])) continue;
                contacts_next.push_back(ct);
                last_force.push_back(force[k]);
                last_holding.push_back(holding[k]);
            }
            for (std::size_t k = 0; k < kept.size(); ++k) {
                if (lifted[k]) continue;
                at.local[kept[k]] = static_cast<std::uint32_t>(kept_next.size());
                kept_next.push_back(kept[k]);
            }
            if (kept_next.empty()) return;
            kept.swap(kept_next);
            kept_contacts.swap(contacts_next);
            // (balanced() sets the residuals afresh from the forces chosen.)
            carry_down(kept, kept_contacts, inv_mass, gravity);
            const double guess = leave(kept, kept_contacts, inv_mass, gravity);
            force.swap(last_force);
            holding.swap(last_holding);
            if (leave(kept, kept_contacts, inv_mass, gravity) > guess) {
                force.swap(last_force);
                holding.swap(last_holding);
            }
        }
        on_moving(kept, kept_contacts, above);
        for (std::size_t k = 0; k < kept.size(); ++k)
            if (!lifted[k]) asleep_now.push_back(kept[k]);
    }
    // Compressed rows: `first` (m + 1 offsets) and `items`, from the pairs (row, item) that
    // each(fn) hands to fn(row, item), in its order within a row; `each` is called twice.
    template <class Each>
    void rows(std::size_t m, std::vector<std::uint32_t>& first, std::vector<std::uint32_t>& items, Each&& each) {
        first.assign(m + 1, 0);
        each([&](std::uint32_t row, std::uint32_t) { ++first[row + 1]; });
        for (std::size_t k = 0; k < m; ++k) first[k + 1] += first[k];
        items.resize(first[m]);
        stack.assign(first.begin(), first.end() - 1);  // fill cursors
        each([&](std::uint32_t row, std::uint32_t item) { items[stack[row]++] = item; });
    }
    // Sets `lifted` for each member that `disturbed` marks (it rests on a moving ball)
    // and each member resting, through other members, on one of those; `above(n)`: does a contact
    // pushing along n push upwards? A walk over the members resting on each member: linear in the
    // members and contacts.
    template <class Above>
    void on_moving(std::span<const std::uint32_t> members, std::span<const IslandContact> touching,
                   Above&& above) {
        Islands& at = slots();
        const std::size_t m = members.size();
        lifted.assign(m, 0);
        // For each member, the members resting on it.
        auto for_each_resting = [&](auto&& fn) {  // fn(lower, upper), local indices
            for (const IslandContact& ct : touching) {
                if (ct.b == kFixed) continue;
                if (above(ct.n)) fn(at.local[ct.a], at.local[ct.b]);
                else if (above(-ct.n)) fn(at.local[ct.b], at.local[ct.a]);
            }
        };
        rows(m, first_resting, resting, for_each_resting);
        stack.clear();
        for (std::size_t k = 0; k < m; ++k) {
            if (!at.disturbed[members[k]]) continue;
            lifted[k] = 1;
            stack.push_back(static_cast<std::uint32_t>(k));
        }
        while (!stack.empty()) {
            const std::uint32_t k = stack.back();
            stack.pop_back();
            for (std::uint32_t r = first_resting[k]; r < first_resting[k + 1]; ++r) {
                if (lifted[resting[r]]) continue;
                lifted[resting[r]] = 1;
                stack.push_back(resting[r]);
            }
        }
    }
};

}  // namespace ballistic::detail
