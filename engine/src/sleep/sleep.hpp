// Ballistic — sleeping (docs/architecture.md, "Piles that settle", gives the rules and why they are
// these): when a ball is quiet, when a ball or a cluster can stand and falls asleep, and waking.
//
// Invariants: a sleeping ball has zero velocity and the sleeping entry of its supports in the
// table of rests, and every change of a ball's motion here increments its event counter, so that
// predictions of it become stale. A ball falls asleep alone only on statics and sleeping balls; a
// cluster only when non-negative contact forces hold it (Islands::balanced()).
#pragma once

#include <ballistic/types.hpp>

#include "base/parallel.hpp"
#include "space/balls.hpp"
#include "space/cells.hpp"
#include "sleep/islands.hpp"
#include "rules/sleep_rules.hpp"
#include "space/statics.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

namespace ballistic::detail {

class Sleep {
public:
    Sleep(const WorldDef& def, Balls& balls, const Cells& cells, const Statics& statics, const SleepRules& rules,
          const Parallel& parallel)
        : def_(def), balls_(balls), cells_(cells), statics_(statics), rules_(rules), parallel_(parallel) {}

    // Can anything sleep? It takes dissipation (restitution below one, or friction), gravity, a
    // sleep_speed and planes, capsules or blocks to rest on.
    bool enabled() const { return sleeping_possible(def_, !statics_.planes().empty(), statics_.has_finite()); }
    // Can a ball jam? The jam rule holds then, whether or not anything else may sleep.
    bool jams() const { return jams_possible(def_, !statics_.planes().empty(), statics_.has_finite()); }
    // Below this speed a ball is slow (SleepRules::slow()).
    double slow() const { return rules_.slow(); }
    // The static friction with which balls stand: sleep_friction, and at least the friction of
    // the collisions, which holds them in motion.
    double standing_friction() const { return std::max(def_.sleep_friction, def_.friction); }

    // Is the ball's collision at `now` part of a jam? Its previous event was at `now` too, or
    // since then it can have travelled no more than rounding can resolve (10⁻⁹ of its radius):
    // jammed at zero gaps between other bodies, it passes impacts around at one instant, or, when
    // rounding left gaps, at instants apart by next to nothing. The path it can have taken
    // counts, not where it is: a ball bouncing straight up and down is back where it was a
    // bounce later, and an elastic one was stopped on the floor after 64 bounces. Read before
    // the ball is brought to `now`.
    bool jammed(std::uint32_t slot, double now) const {
        if (!jams()) return false;  // only note_quiet() reads it, and it does nothing then
        const double since = now - balls_.t[slot];
        if (since == 0.0) return true;
        if (balls_.asleep(slot)) return false;
        const double path = (length(balls_.velocity(slot)) + length(balls_.acceleration(slot)) * since) * since;
        return path <= kJamTravel * balls_.radius[slot];
    }
    // After a collision of the ball that approached at `approach`: is it still slow? Also bounds
    // its collisions in a jam (`jammed`, from jammed()), and stops at once a slow ball `wedged`
    // among sleeping balls and statics (Response::leave_immovables()) that its acceleration
    // presses into one of them.
    void note_quiet(std::uint32_t slot, double approach, double now, bool jammed, bool wedged);
    // Awake, quiet and now slower than sleep_speed: may it sleep once its weight is carried?
    bool may_sleep(std::uint32_t slot, double now) const;
    // Can the statics and the sleeping balls the ball touches at `now` carry its weight and the
    // pushes of the balls resting on it (each in the cone of their normals, or held with
    // standing_friction()), with no awake ball under it?
    bool is_carried(std::uint32_t slot, double now) const;
    // Does the sleeping ball stay asleep under the impact of the awake ball `hitter`, approaching
    // at normal speed u, that would give it an impulse along `push` (any length; with friction,
    // not only along the line of centres)? Its statics and sleeping balls carry it when it pushes
    // the ball into them (they can give the force against it) and brings less energy than
    // lifting the ball by wake_lift of its radius would take (WorldDef::wake_lift).
    bool carries(std::uint32_t slot, std::uint32_t hitter, double now, Vec3 push, double u) const;
    // Puts it to sleep if it may and can; true if so. `partner`, the ball it has just collided
    // with, `dp` from the partner's centre to this ball's: resting on an awake partner, it cannot,
    // and nothing is searched.
    bool sleep_if_carried(std::uint32_t slot, double now, std::uint32_t partner = kFixed, Vec3 dp = {});
    void sleep_now(std::uint32_t slot, double now);
    // A static or sleeping ball in contact with a ball: `order` fixes their order whatever the
    // cells' lists (the statics in their order, then the balls by slot), n is the unit normal
    // towards the ball.
    struct Immovable {
        std::uint64_t order;
        Vec3 n;
        bool ball;
    };
    // The statics and sleeping balls other than `except` (a ball's slot; kFixed: none) in
    // contact with the ball at `now` (within rounding) that velocity v moves into slower than
    // `slower_than`, in `order`: the first out.size() of them when there are more. Their number;
    // none in a world where nothing jams or sleeps, and with `need_ball` none unless a sleeping
    // ball is among them (the balls are looked at first, the statics only then).
    std::size_t touching_immovables(std::uint32_t slot, double now, std::uint32_t except, Vec3 v, double slower_than,
                                    bool need_ball, std::span<Immovable> out) const;
    // The most contacts a ball's tests keep: twelve touching equal balls and three planes fit.
    static constexpr std::size_t kMaxContacts = 24;
    void wake(std::uint32_t slot, double now);

    // How far apart bodies count as touching: within touch_gap (resting, for sleeping); within
    // kStillDrift of the radius or as high as a slow ball rises, whichever is more (a test of a
    // pile whose history is not known); or within rounding (kJamTravel of the radius: in contact,
    // for an impact).
    enum class Within { TouchGap, StillDrift, Rounding };
    // A quiet ball is still when it has stayed within this fraction of its radius of one place for
    // kStillTimes sleep_time (seen at the tests of sleeping).
    static constexpr double kStillDrift = 1e-2;
    static constexpr double kStillTimes = 10.0;

    // At `now` (the cells valid): each cluster of touching quiet awake balls that
    // non-negative contact forces can hold in equilibrium, against the statics and sleeping balls
    // it touches, falls asleep at once, and `fell_asleep` is told the balls that did. All or
    // nothing: should it fail (out of memory) before `fell_asleep`, no ball has changed.
    // The balls tried are every awake ball, or those of `among` (slots, ascending), and it costs
    // what they cost: the others are neither tried nor held still.
    // Contacts count `within` TouchGap, or StillDrift where the balls' history is not known (the
    // events predicted afresh, as for a pile loaded at rest): the still, jam and wedge rules stop
    // balls on supports that far, and a file holds none of the history they read.
    // A ball then stays awake, with every ball resting on it, unless something under it touches it
    // within the touching gap, as a still ball must; its weight counts in the balance all the same.
    using FellAsleep = std::function<void(std::span<const std::uint32_t>)>;
    void sleep_clusters(double now, const FellAsleep& fell_asleep, Within within = Within::TouchGap);
    void sleep_clusters(double now, std::span<const std::uint32_t> among, const FellAsleep& fell_asleep,
                Within within = Within::TouchGap);
    // The awake balls' slots, ascending (none when nothing can sleep).
    void list_awake(std::vector<std::uint32_t>& awake) const;

    // The sleeping balls touching a ball, between steps (at the world's `time`): what may fail
    // first (the list, and the awake entries of the table of rests they will take, at most unused
    // ones added), then the waking, which cannot fail. The balls near it are found in the cells
    // (valid whenever there are balls).
    using Woken = std::vector<std::pair<std::uint32_t, std::uint32_t>>;  // slot, awake rest
    Woken prepare_wake_touching(std::uint32_t slot, double time);
    void commit_wake(const Woken& woken, double time) noexcept;
    // Of the balls from slot `first` on that were added asleep (the cells valid): those with
    // nothing under them, no static and no ball touching them from below but balls added asleep
    // that have nothing under them either, wake standing still (awake, on nothing). `held` and
    // `found` are scratch of one entry per ball from `first` on, allocated by the caller: it
    // never fails.
    void wake_unheld(std::uint32_t first, double now, std::vector<std::uint8_t>& held,
                     std::vector<std::uint32_t>& found) noexcept;
    // Appends the awake balls below slot `first` that the ball rests on, as a sleeping load
    // whose Wake their predictions find (within the touch gap and rounding).
    void awake_under(std::uint32_t slot, double time, std::uint32_t first, std::vector<std::uint32_t>& out) const;

private:
    // Does the ball's acceleration press it into a sleeping ball or static it touches and does
    // not leave?
    bool pressed_into_immovable(std::uint32_t slot, double now) const;
    // Can the bodies with these unit normals (towards the ball) give it a force along unit u?
    // Pushing alone, or with standing_friction(): each force apart suffices, since the forces
    // they can give make a convex cone.
    bool can_give(Vec3 u, const Vec3* normals, std::size_t m) const;
    // The entry of the table of rests for the ball asleep on its supports (added if new), and
    // the ball put to sleep with it (never fails).
    std::uint32_t asleep_rest(std::uint32_t slot);
    void sleep_on(std::uint32_t slot, double now, std::uint32_t rest) noexcept;
    double reach(double radius, Within within) const {
        switch (within) {
            case Within::TouchGap: return rules_.touch_gap(radius);
            case Within::StillDrift: return std::max(kStillDrift * radius, rules_.slow_rise());
            case Within::Rounding: break;
        }
        return kJamTravel * radius;
    }
    // Does a static or a ball touch it from below, within the touching gap?
    bool touched_from_below(std::uint32_t slot, double now) const;
    // The steps of sleep_clusters(), on `islands_`. Candidates: the balls of `among` that may
    // sleep, each a cluster of its own, with the per-slot scratch set for them.
    void list_candidates(double now, std::span<const std::uint32_t> among);
    // Their contacts (`within`), and clusters joined across those between candidates
    // (union–find); marks the candidates still, and those an awake ball that is not quiet
    // carries: it holds them up for the balance (as it does now), but they stay awake.
    void link_candidates(double now, Within within);
    // Members and contacts grouped by cluster; lists in `asleep_now` the balls of the clusters
    // that stand (Islands::stand()).
    void stand_clusters();
    // fn(j, n) for every body the ball touches at `now`: j the slot of a ball or kFixed for a
    // static, n the unit normal towards the ball.
    template <class Fn>
    void for_each_touching(std::uint32_t slot, double now, Fn&& fn, Within within = Within::TouchGap) const;
    template <class Fn>  // the statics alone, in their order
    void for_each_touching_static(std::uint32_t slot, double now, Fn&& fn, Within within) const;
    template <class Fn>  // the balls alone (the cells must be valid; the statics' lists need not)
    void for_each_touching_ball(std::uint32_t slot, double now, Fn&& fn, Within within = Within::TouchGap) const;
    // Has the ball stayed within 1 % of its radius of where it was seen still, for ten times
    // sleep_time? Such a ball stands however its contact forces come out: the collisions hold it.
    bool still(std::uint32_t slot, double now) const;
    // After sleep_clusters(): the awake balls of `among` that may not sleep, or drifted, are still from
    // where they are now (reads `islands_.parent`: kFixed for those that may not sleep).
    void restart_still(double now, std::span<const std::uint32_t> among) noexcept;

    const WorldDef& def_;
    Balls& balls_;
    const Cells& cells_;
    const Statics& statics_;
    const SleepRules& rules_;
    const Parallel& parallel_;
    Islands islands_;  // sleep_clusters()'s scratch, kept between steps
    // stand_clusters(): each cluster's members (in islands_.candidates) and contacts (in
    // islands_.sorted); the solvers of the shares after the first (link_candidates() lists those
    // shares' contacts in theirs), and where each share ends.
    struct Cluster {
        std::size_t first, last, begin, end;
    };
    static constexpr std::size_t kMembersPerShare = 64;
    static constexpr std::size_t kCandidatesPerShare = 64;  // link_candidates()
    std::vector<Cluster> clusters_;
    std::vector<Islands> solvers_;
    std::vector<std::size_t> share_end_;
};

}  // namespace ballistic::detail
