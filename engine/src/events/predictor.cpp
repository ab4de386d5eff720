// Ballistic — prediction (predictor.hpp). A ball's pending event is the earlier of its next
// cell crossing and its contact: the earliest collision with the statics and the balls of the 27
// cells around it, kept with no horizon. When the ball crosses into a new cell its trajectory is
// unchanged, so its contact stays right for the balls it already saw, and only the 9 cells that
// just came into reach are new (Lubachevsky's scheme; the other 18 were searched before). A
// contact whose partner has had an event since is found stale when it comes up, like any
// ball–ball event, and re-predicted.
#include "events/predictor.hpp"

#include "base/prefetch.hpp"
#include "kernels/toi.hpp"
#include "kernels/toi_simd.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <span>
#include <type_traits>

namespace ballistic::detail {

namespace {

bool earlier(const Pending& a, const Pending& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.other < b.other;
}
Pending earliest(const Pending& a, const Pending& b) { return earlier(b, a) ? b : a; }
void lower(Contact& contact, const Pending& event, std::uint64_t other_counter = 0) {
    if (earlier(event, contact.event)) contact = {event, other_counter};
}

// Per-thread scratch: the neighbours of one ball (slots and image shifts), then, when the balls'
// accelerations differ, their relative state as lanes. Every array has room for `capacity()`.
struct PairScratch {
    std::vector<std::uint32_t> slot;
    std::vector<std::uint32_t> order;  // the slot of each formed lane (lanes are formed reordered)
    std::vector<double> sx, sy, sz;
    std::vector<double> dpx, dpy, dpz, dvx, dvy, dvz, dax, day, daz, sigma, out;
    std::size_t capacity() const { return slot.size(); }
    void grow() {  // `slot` last: should an allocation fail, capacity() still holds for all
        const std::size_t size = std::max<std::size_t>(64, 2 * capacity());
        for (auto* v : {&sx, &sy, &sz, &dpx, &dpy, &dpz, &dvx, &dvy, &dvz, &dax, &day, &daz, &sigma, &out})
            v->resize(size);
        order.resize(size);
        slot.resize(size);
    }
    void set(std::size_t k, Vec3 dp, Vec3 dv, Vec3 da, double sig) {
        dpx[k] = dp.x; dpy[k] = dp.y; dpz[k] = dp.z;
        dvx[k] = dv.x; dvy[k] = dv.y; dvz[k] = dv.z;
        dax[k] = da.x; day[k] = da.y; daz[k] = da.z;
        sigma[k] = sig;
    }
};

}  // namespace

Pending Predictor::predict(std::uint32_t i, double now) { return predict(i, now, cells_.key(i)); }

Pending Predictor::predict(std::uint32_t i, double now, const CellKey& key) {
    const Motion m = motion(i, now);
    Contact contact;
    // A Wake still due of a ball the jam put to sleep (unchanged since) stays: a support that
    // has left it wakes it all the same once the delay has passed. Any other Wake is found
    // afresh from the support's new path (predict_balls()).
    if (const Contact& old = contacts_[i]; old.event.kind == Kind::Wake && old.event.time >= now &&
                                           !balls_.asleep(i) && balls_.counter[old.event.other] == old.other_counter &&
                                           SleepRules::jam_slept(balls_, old.event.other))
        contact = old;
    auto consider = [&](double tau, Kind kind, std::uint32_t other) {
        if (tau != kNever) lower(contact, {now + tau, other, kind});
    };
    // A sleeping ball stands still: only awake balls can meet it.
    const bool still = !shared_gravity() && balls_.asleep(i);
    const Supports& sup = balls_.supports(i);
    const std::vector<PlaneDef>& planes = statics_.planes();
    const std::vector<CylinderDef>& cylinders = statics_.cylinders();
    for (std::uint32_t k = 0; k < planes.size() && !still; ++k) {
        if (std::find(sup.begin(), sup.end(), static_cast<std::int32_t>(k)) != sup.end()) continue;
        const PlaneDef& plane = planes[k];
        consider(toi_ball_plane(m.p, m.v, m.a, m.r, plane.point, plane.normal, contact.event.time - now),
                 Kind::BallPlane, k);
    }
    for (std::uint32_t k = 0; k < cylinders.size() && !still; ++k) {
        const CylinderDef& c = cylinders[k];
        consider(toi_ball_cylinder(m.p, m.v, m.a, m.r, c.point, c.axis, c.radius, contact.event.time - now),
                 Kind::BallCylinder, k);
    }
    // A roamer is alone in the blocks around its own, and no capsules or blocks are near (Roaming).
    if (roaming_ && roaming_->active()) [[unlikely]] {
        if (const int level = roaming_->level(i); level > 0) {
            contacts_[i] = contact;
            return earliest(crossing(key, m, now, level), contact.event);
        }
    }
    if (!still && statics_.has_finite()) {
        predict_finite(now, m, sup, key, true, contact);
        predict_leaving(now, m, sup, contact);
    }
    predict_balls(i, now, m, key, Cells::kAllNear, contact);
    return earliest(crossing(key, m, now), contact.event);
}

void Predictor::forget_contacts(std::size_t balls, double now, bool keep_wakes) {
    Column<Contact> kept(balls);  // allocated first: a failure changes nothing
    if (keep_wakes)
        for (std::size_t s = 0; s < std::min(balls, contacts_.size()); ++s)
            if (const Contact& c = contacts_[s]; c.event.kind == Kind::Wake && c.event.time >= now &&
                                                 c.event.other < balls && SleepRules::jam_slept(balls_, c.event.other))
                kept[s] = c;
    contacts_ = std::move(kept);
}

Pending Predictor::predict_entering(std::uint32_t i, double now, const CellKey& key, int face) {
    return predict_kept(i, now, key, Cells::layer_beyond(face));
}

Pending Predictor::roam(std::uint32_t i, double now, const CellKey& key, int level) const {
    return earliest(crossing(key, motion(i, now), now, level), contacts_[i].event);
}

Pending Predictor::predict_around(std::uint32_t i, double now, const CellKey& key) {
    return predict_kept(i, now, key, Cells::kAllNear);
}

Pending Predictor::predict_kept(std::uint32_t i, double now, const CellKey& key, std::uint32_t cells) {
    const Motion m = motion(i, now);
    Contact contact = contacts_[i];
    if (statics_.has_finite()) predict_finite(now, m, balls_.supports(i), key, false, contact);
    predict_balls(i, now, m, key, cells, contact);
    return earliest(crossing(key, m, now), contact.event);
}

void Predictor::predict_finite(double now, const Motion& m, const Supports& sup, const CellKey& key, bool everywhere,
                               Contact& contact) const {
    statics_.finite_near(key, [&](const Finite& f) {
        const double horizon = contact.event.time - now;
        if (f.block) {
            // On a face of the block its centre is over that face, where nothing else of the block
            // is as near: its only event with the block is leaving the face (predict_leaving()).
            // Predicted, the face's edge grazed the ball within rounding as its centre came to
            // it, the ball left the face, met it again at once and settled on it, in a loop at
            // one instant.
            if (std::any_of(sup.begin(), sup.end(), [&](std::int32_t k) { return on_face_of(k, f.index); })) return;
            const BlockDef& b = statics_.blocks()[f.index];
            const double tau = toi_ball_block(m.p, m.v, m.a, m.r, b.min, b.max, horizon);
            if (tau != kNever) lower(contact, {now + tau, f.index, Kind::BallBlock});
            return;
        }
        const Capsule& c = statics_.capsules()[f.index];
        const double tau = toi_ball_capsule(m.p, m.v, m.a, m.r, c.def.a, c.def.b, c.u, c.length, c.def.radius, horizon);
        if (tau != kNever) lower(contact, {now + tau, f.index, Kind::BallCapsule});
    }, everywhere);
}

void Predictor::predict_leaving(double now, const Motion& m, const Supports& sup, Contact& contact) const {
    for (const std::int32_t k : sup) {
        if (!is_face(k)) continue;
        const std::uint32_t b = face_block(k);
        const BlockDef& block = statics_.blocks()[b];
        const int d = face_index(k) / 2;
        for (int e = 0; e < 3; ++e) {
            if (e == d) continue;
            const double x = axis(m.p, e), v = axis(m.v, e), a = 0.5 * axis(m.a, e);
            for (const double tau : {first_closing_quadratic(x - axis(block.min, e), v, a, contact.event.time - now),
                                     first_closing_quadratic(axis(block.max, e) - x, -v, -a, contact.event.time - now)})
                if (tau != kNever) lower(contact, {now + tau, b, Kind::BallBlock});
        }
    }
}

Predictor::Motion Predictor::motion(std::uint32_t i, double now) const {
    const Vec3 a = shared_gravity() ? def_.gravity : balls_.acceleration(i);
    return {balls_.position_at(i, now, a), balls_.velocity_at(i, now, a), a, balls_.radius[i]};
}

Pending Predictor::crossing(const CellKey& key, const Motion& m, double now, int level) const {
    return level == 0 ? crossing_of<false>(key, m, now, 0) : crossing_of<true>(key, m, now, level);
}

template <bool Block>
Pending Predictor::crossing_of(const CellKey& key, const Motion& m, double now, int level) const {
    // The earliest crossing, ties to the lowest face (faces come in ascending order), kept in
    // two scalars: a Pending copied per face made a chain of stores and loads. As earlier() with
    // the empty Pending to start from: a crossing at +inf is taken, one at NaN never.
    double first = kNever;
    int first_face = -1;
    auto consider = [&](int face, double tau) {
        if (tau == kNever || !cells_.has_face(key, face)) return;
        const double t = now + tau;
        const bool sooner = (t < first) | ((first_face < 0) & (t == first));  // no branch: a coin toss
        first = sooner ? t : first;
        first_face = sooner ? face : first_face;
    };
    // The cells (of the block, for a roamer) along each axis: from `low` to `low + side`.
    const int shift = Block ? 3 * level : 0;
    const std::int64_t side = Block ? std::int64_t{1} << shift : 1;
    for (int d = 0; d < 3; ++d) {
        const double x = axis(m.p, d), vd = axis(m.v, d), ad = axis(m.a, d);
        const std::int64_t low = Block ? (key[d] >> shift) << shift : key[d];
        if (ad == 0.0) {
            // Without acceleration along the axis only the face ahead can close (the gap to the
            // other is linear and opening, or constant when the ball stands still along the
            // axis). It is picked without a branch on the sign of vd, a coin toss for the
            // predictor: the gap x − bound below is −(bound − x), the same value (a zero gap
            // becomes −0: closed, as +0). The gap closes at |vd|, the bits of
            // first_closing_quadratic(gap, −|vd|, 0) without its call: at once when closed, never
            // when NaN (no NaN is sooner).
            if (!(std::abs(vd) > 0.0)) continue;  // standing still (or NaN): never crosses
            const int up = vd > 0.0;
            const double gap = (cells_.bound(d, low + up * side) - x) * static_cast<double>(2 * up - 1);
            consider(2 * d + up, gap <= 0.0 ? 0.0 : gap / std::abs(vd));
            continue;
        }
        consider(2 * d, first_closing_quadratic(x - cells_.bound(d, low), vd, 0.5 * ad, kNever));
        consider(2 * d + 1, first_closing_quadratic(cells_.bound(d, low + side) - x, -vd, -0.5 * ad, kNever));
    }
    if (first_face < 0) return {};
    return {first, static_cast<std::uint32_t>(first_face), Kind::Crossing};
}

namespace {

// Of the neighbours in lanes [0, n), those with the mover's acceleration m.a move to the front,
// their slots and shifts with them, for the kernel to gather: their count is returned. The
// others (a ball resting on a plane and a falling one) get their relative state formed as lanes
// from the back, from `quartics` on. An awake mover wakes each sleeping neighbour resting on it
// once it has moved away from it by the touching gap (their centres touch_gap farther apart than
// touching), should nothing come before (`contact`); a neighbour the jam put to sleep, not
// before it has slept wake_delay (SleepRules::wake_time): a support that leaves within the delay
// still wakes its load. A mover that stands still (no velocity, no acceleration) moves only at
// an event that touches it, which predicts it again.
std::size_t split_by_acceleration(PairScratch& lanes, std::size_t n, bool imaged, const Balls& balls,
                                  const SleepRules& rules, std::uint32_t i, double now, const Predictor::Motion& m,
                                  Contact& contact, std::size_t& quartics) {
    const Vec3 p = m.p, v = m.v, a = m.a;
    const double r = m.r;
    const bool wakes = (v != Vec3{} || a != Vec3{}) && !balls.asleep(i);
    const double gap = wakes ? rules.touch_gap(r) : 0.0;
    // One horizon for every load's opening (the earliest event before the balls), so that
    // the roots' bits do not depend on the order the cells hand the loads in.
    const double wake_horizon = contact.event.time - now;
    std::size_t quadratics = 0;
    for (std::size_t k = 0; k < n; ++k) {
        const std::uint32_t j = lanes.slot[k];
        const RestTable::Rest& rest = balls.rests[balls.rest[j]];
        const Vec3 aj = rest.acceleration;
        // Same operation order as collide_balls(): (p_j − p_i) + image shift.
        const Vec3 shift = imaged ? Vec3{lanes.sx[k], lanes.sy[k], lanes.sz[k]} : Vec3{};
        auto dp = [&] { return (balls.position_at(j, now, aj) - p) + shift; };
        const double sigma = r + balls.radius[j];
        Vec3 d;  // dp(), formed once
        if (aj == a) {
            lanes.slot[quadratics] = j;
            if (imaged) {
                lanes.sx[quadratics] = shift.x;
                lanes.sy[quadratics] = shift.y;
                lanes.sz[quadratics] = shift.z;
            }
            ++quadratics;
        } else {
            --quartics;
            d = dp();
            lanes.set(quartics, d, balls.velocity_at(j, now, aj) - v, aj - a, sigma);
            lanes.order[quartics] = j;
        }
        if (!wakes || !rest.asleep) continue;
        // Found within rounding beyond the gap too: a load whose gap opens at the instant of
        // another event of its support (another load's Wake) wakes then.
        if (aj == a) d = dp();
        if (SleepRules::beyond(d, sigma + gap + kJamTravel * sigma)) continue;  // touching <= gap
        const double touching = std::min(gap, rules.touch_gap(balls.radius[j]));
        if (rules.resting_on(d, sigma, touching + kJamTravel * sigma)) {
            const double apart = toi_apart(d, -v, -a, sigma + touching, wake_horizon);
            if (apart != kNever)
                lower(contact, {std::max(now + apart, rules.wake_time(balls, j, now)), j, Kind::Wake}, balls.counter[j]);
        }
    }
    return quadratics;
}

}  // namespace

void Predictor::predict_balls(std::uint32_t i, double now, const Motion& m, const CellKey& key, std::uint32_t cells,
                                Contact& contact) {
    const Vec3 p = m.p, v = m.v, a = m.a;  // named, not bound: lambdas below capture them
    const double r = m.r;
    // Two passes: find the neighbours and prefetch their state, then gather it into lanes (the
    // SIMD kernel gathers for itself when every ball falls with the same acceleration).
    // Neighbours sit at scattered slots; overlapping their cache misses is most of the speed.
    const bool shared_acceleration = shared_gravity();
    thread_local PairScratch lanes;
    const Balls::MotionColumns columns = balls_.motion_columns();
    const std::uint64_t* const counters = balls_.counter.data();
    const std::uint32_t* const rests = balls_.rest.data();
    bool imaged = false;  // were shifts handed (and stored)? Usually no cell is a periodic image
    // The neighbours found so far, the capacity and the slots held here, in registers, not read
    // through the thread-local scratch at each neighbour.
    std::size_t n = 0, capacity = lanes.capacity();
    std::uint32_t* found = lanes.slot.data();
    cells_.for_each_near(key, [&](std::uint32_t j, const auto& shift) {
        if (j == i) return;
        if (n == capacity) [[unlikely]] {
            lanes.grow();
            capacity = lanes.capacity();
            found = lanes.slot.data();
        }
        if constexpr (std::is_same_v<std::decay_t<decltype(shift)>, Vec3>) {
            lanes.sx[n] = shift.x;
            lanes.sy[n] = shift.y;
            lanes.sz[n] = shift.z;
            imaged = true;
        }
        found[n++] = j;
        columns.prefetch(j);
        prefetch(counters + j);
        if (!shared_acceleration) prefetch(rests + j);
    }, cells);
    if (n == 0) {
        contacts_[i] = contact;
        return;
    }
    const std::span out = std::span(lanes.out).first(n);
    // The contact keeps the earliest of the impacts out[begin, end) with the balls slots[...].
    // The lanes with an impact are found first as a bit mask and then visited: whether a lane
    // has one is a coin toss, which as a branch per lane the predictor mostly loses.
    auto keep = [&](std::size_t begin, std::size_t end, const std::vector<std::uint32_t>& slots) {
        for (std::size_t base = begin; base < end; base += 64) {
            const std::size_t stop = std::min(end, base + 64);
            std::uint64_t hits = 0;
            for (std::size_t k = base; k < stop; ++k) hits |= std::uint64_t{out[k] != kNever} << (k - base);
            for (; hits != 0; hits &= hits - 1) {
                const std::size_t k = base + static_cast<std::size_t>(std::countr_zero(hits));
                const std::uint32_t j = slots[k];
                lower(contact, {now + out[k], j, Kind::BallBall}, balls_.counter[j]);
            }
        }
    };
    auto shifts = [&](const std::vector<double>& column) {
        return imaged ? std::span<const double>(column) : std::span<const double>();
    };
    // The neighbours lanes.slot[0, count) with the mover's acceleration, gathered by the kernel.
    auto neighbours = [&](std::size_t count) {
        if (count == 0) return;
        toi_neighbours_batch_simd({p, v, a, r, now},
                                  {balls_.x, balls_.y, balls_.z, balls_.vx, balls_.vy, balls_.vz, balls_.t, balls_.radius,
                                   std::span(lanes.slot).first(count), shifts(lanes.sx), shifts(lanes.sy), shifts(lanes.sz)},
                                  contact.event.time - now, out.first(count));
        keep(0, count, lanes.slot);
    };
    if (shared_acceleration) {
        neighbours(n);
    } else {
        // Neighbours with the mover's acceleration first (quadratics, gathered by the kernel as
        // above), then the others (quartics), solved only up to the earliest impact so far: only
        // the earliest is kept, and a quartic's cost grows with its interval.
        std::size_t quartics = n;
        const std::size_t quadratics = split_by_acceleration(lanes, n, imaged, balls_, rules_, i, now, m, contact, quartics);
        neighbours(quadratics);
        if (quartics < n) {
            auto part = [&](const std::vector<double>& lane) { return std::span(lane).subspan(quartics, n - quartics); };
            toi_ball_ball_batch_simd({part(lanes.dpx), part(lanes.dpy), part(lanes.dpz), part(lanes.dvx),
                                      part(lanes.dvy), part(lanes.dvz), part(lanes.dax), part(lanes.day),
                                      part(lanes.daz), part(lanes.sigma)},
                                     contact.event.time - now, out.subspan(quartics, n - quartics));
            keep(quartics, n, lanes.order);
        }
    }
    contacts_[i] = contact;
}

}  // namespace ballistic::detail
