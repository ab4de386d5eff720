// Ballistic — exact ray casts (the picking test of the ray–sphere article) against balls,
// planes, cylinders, capsules and blocks. Balls are found by walking the cells the ray crosses (3D-DDA) and
// testing the balls of the cells around each, each ball once, in the SIMD ray–sphere kernel;
// the walk stops as soon as no later cell can hold a nearer hit.
#include "kernels/toi.hpp"
#include "kernels/toi_simd.hpp"
#include "base/validate.hpp"
#include "world/world_impl.hpp"

#include <algorithm>
#include <cmath>

namespace ballistic {

using detail::axis;
using detail::CellKey;
using detail::set_axis;

namespace {

// The balls one step of a ray's walk tests: slots and spheres as lanes, and the kernel's answers.
struct SphereScratch {
    std::size_t n = 0;
    std::vector<std::uint32_t> slot;
    std::vector<double> cx, cy, cz, radius, out;
    void push(std::uint32_t s, Vec3 centre, double r) {
        if (n == slot.size()) grow();
        cx[n] = centre.x;
        cy[n] = centre.y;
        cz[n] = centre.z;
        radius[n] = r;
        slot[n++] = s;
    }
    void grow() {  // `slot` last: should an allocation fail, every lane array still holds slot.size()
        const std::size_t size = std::max<std::size_t>(64, 2 * slot.size());
        for (auto* v : {&cx, &cy, &cz, &radius, &out}) v->resize(size);
        slot.resize(size);
    }
    detail::SphereLanes spheres() const { return {cx, cy, cz, radius}; }
};

void validate(const Ray& ray, const std::string& field) {
    detail::require_finite(field + ".origin", ray.origin);
    // |d|² must be an ordinary double: the hit distances are computed from it.
    if (!std::isnormal(dot(ray.direction, ray.direction)))
        detail::reject(field + ".direction", "must be finite, not zero and of ordinary size, got " + detail::show(ray.direction));
    if (!(ray.max_distance > 0.0))
        detail::reject(field + ".max_distance", "must be > 0, got " + detail::show(ray.max_distance));
}

// The part [enter, leave] of the ray o + s d, 0 ≤ s ≤ limit, inside the box [lo, hi] (none when
// enter > leave), and the axis of the face it enters through (−1 when it starts inside).
struct Inside {
    double enter, leave;
    int face;
};
Inside inside_box(Vec3 o, Vec3 d, Vec3 lo, Vec3 hi, double limit) {
    Inside in{0.0, limit, -1};
    for (int a = 0; a < 3; ++a) {
        const double da = axis(d, a), oa = axis(o, a);
        if (da == 0.0) {
            if (oa < axis(lo, a) || oa > axis(hi, a)) in.leave = -1.0;  // beside the box: never in it
            continue;
        }
        double ta = (axis(lo, a) - oa) / da, tb = (axis(hi, a) - oa) / da;
        if (ta > tb) std::swap(ta, tb);
        if (ta > in.enter) {
            in.enter = ta;
            in.face = a;
        }
        in.leave = std::min(in.leave, tb);
    }
    return in;
}

// Walks the cells of `cells` that the ray o + d t passes from t0 on, in order, while they lie
// within the keys lowest–highest and are entered before t1: visit(key, entered, layer), with the
// time the ray entered the cell and the layer of neighbours that came into reach with it
// (Cells::kAllNear for the first); the walk stops when visit returns false.
template <class Visit>
void walk_cells(const detail::Cells& cells, Vec3 o, Vec3 d, double t0, double t1, const CellKey& lowest,
                const CellKey& highest, Visit&& visit) {
    CellKey key = cells.key_of(o + d * t0);
    double next[3];
    int step[3];
    for (int a = 0; a < 3; ++a) {
        const double da = axis(d, a);
        step[a] = da > 0.0 ? 1 : (da < 0.0 ? -1 : 0);
    }
    auto boundary = [&](int a) {
        const double da = axis(d, a);
        // The outermost cells have no face beyond them: along that axis the walk stays in them.
        if (step[a] == 0 || !cells.has_face(key, 2 * a + (step[a] > 0 ? 1 : 0)))
            return std::numeric_limits<double>::infinity();
        const std::int64_t k = key[a] + (step[a] > 0 ? 1 : 0);
        return (cells.bound(a, k) - axis(o, a)) / da;
    };
    for (int a = 0; a < 3; ++a) next[a] = boundary(a);
    double entered = t0;
    std::uint32_t layer = detail::Cells::kAllNear;
    while (visit(key, entered, layer)) {
        const int a = next[0] <= next[1] ? (next[0] <= next[2] ? 0 : 2) : (next[1] <= next[2] ? 1 : 2);
        entered = next[a];
        if (!(entered <= t1)) return;
        key[a] += step[a];
        if (key[a] < lowest[a] || key[a] > highest[a]) return;
        next[a] = boundary(a);
        layer = detail::Cells::layer_beyond(2 * a + (step[a] > 0 ? 1 : 0));
    }
}

// A ray being cast: its nearest hit so far, and how far a nearer one may lie.
struct Cast {
    Vec3 o, d;
    std::optional<RayHit> best;
    double limit;
    // A static's hit at t becomes the nearest when nearer (ties keep the first found: statics,
    // then cell order).
    void offer(double t, RayHit::Target target, Vec3 normal, BallId ball, std::uint32_t index) {
        if (!(t >= 0.0 && t <= limit)) return;
        if (best && t == best->distance) return;
        limit = t;
        best = RayHit{target, t, o + d * t, normal, ball, index};
    }
};

// Offers the hits on the planes whose front the ray starts on (or in), heading into them.
void offer_planes(Cast& ray, const std::vector<PlaneDef>& planes) {
    for (std::uint32_t k = 0; k < planes.size(); ++k) {
        const PlaneDef& plane = planes[k];
        const double denom = dot(ray.d, plane.normal);
        const double height = detail::height(plane, ray.o);
        if (denom < 0.0 && height >= 0.0) ray.offer(-height / denom, RayHit::Target::Plane, plane.normal, {}, k);
    }
}

// Offers the hits on the cylinders the ray starts outside of and enters.
void offer_cylinders(Cast& ray, const std::vector<CylinderDef>& cylinders) {
    const Vec3 o = ray.o, d = ray.d;
    for (std::uint32_t k = 0; k < cylinders.size(); ++k) {
        const CylinderDef& c = cylinders[k];
        const Vec3 w0 = detail::from_axis(c, o), w1 = detail::across(c, d);
        const double a = dot(w1, w1), b = dot(w0, w1), cc = dot(w0, w0) - c.radius * c.radius;
        if (!(a > 0.0) || cc < 0.0 || b >= 0.0) continue;
        const double disc = b * b - a * cc;
        if (disc < 0.0) continue;
        const double t = cc / (-b + std::sqrt(disc));
        ray.offer(t, RayHit::Target::Cylinder, normalize(detail::from_axis(c, o + d * t)), {}, k);
    }
}

// A hit on a capsule or a block (t = ∞: none).
struct FiniteHit {
    double t = INFINITY;
    bool block = false;
    std::uint32_t index = 0;
    Vec3 normal;
};

// The nearest hit on the capsules and blocks within the ray's limit, ties to the first capsule,
// then the first block. Those listed in the cells the ray passes are tested, cell by cell until
// a hit is nearer than the next cell, or every one when the walk would pass more cells than
// there are.
FiniteHit nearest_finite(const Cast& ray, const detail::Statics& statics, const detail::FiniteNear* near) {
    const Vec3 o = ray.o, d = ray.d;
    const double limit = ray.limit;
    FiniteHit nearest;
    auto test = [&](const detail::Finite& f) {
        double t;
        Vec3 normal;
        if (f.block) {
            const BlockDef& b = statics.blocks()[f.index];
            const Inside in = inside_box(o, d, b.min, b.max, limit);
            if (in.face < 0 || in.enter > in.leave) return;  // missed, or from inside: never hit
            t = in.enter;
            set_axis(normal, in.face, axis(d, in.face) > 0.0 ? -1.0 : 1.0);
        } else {
            // Where a ball of radius 0 moving along the ray meets it (a ray from inside never does).
            const detail::Capsule& c = statics.capsules()[f.index];
            t = detail::toi_ball_capsule(o, d, {}, 0.0, c.def.a, c.def.b, c.u, c.length, c.def.radius, limit);
            if (t == detail::kNever || !(t > 0.0)) return;
            normal = normalize(detail::from_segment(c, o + d * t));
        }
        if (!(t >= 0.0 && t <= limit)) return;
        if (std::tie(t, f.block, f.index) < std::tie(nearest.t, nearest.block, nearest.index))
            nearest = {t, f.block, f.index, normal};
    };
    if (!near) return nearest;
    const Inside span = inside_box(o, d, near->lo, near->hi, limit);
    const double t0 = std::max(span.enter, 0.0), t1 = std::min(span.leave, limit);
    const double width = near->coarse.min_width();
    const double passed = (std::abs(d.x) + std::abs(d.y) + std::abs(d.z)) * (t1 - t0) / width + 1.0;
    const std::size_t count = statics.capsules().size() + statics.blocks().size();
    if (!(t0 <= t1)) {
        // The ray misses the box that holds them all.
    } else if (!(passed <= static_cast<double>(count))) {
        for (std::uint32_t k = 0; k < statics.capsules().size(); ++k) test({false, k});
        for (std::uint32_t k = 0; k < statics.blocks().size(); ++k) test({true, k});
    } else {
        const CellKey lowest = near->coarse.key_of(near->lo), highest = near->coarse.key_of(near->hi);
        bool first = true;
        walk_cells(near->coarse, o, d, t0, t1, lowest, highest, [&](const CellKey& key, double entered, std::uint32_t) {
            if (nearest.t < entered) return false;  // a hit is nearer than this cell
            near->cells.for_each(key, first, test);  // those listed for every cell, once
            first = false;
            return true;
        });
    }
    return nearest;
}

// Offers the hits on the balls (all inside `box`, in `cells`), walking the cells the ray crosses.
void offer_balls(Cast& ray, const detail::Balls& balls, const detail::Cells& cells, const Box& box) {
    const Vec3 o = ray.o, d = ray.d;
    std::optional<RayHit>& best = ray.best;
    double& limit = ray.limit;
    // Clip the ray to the box that holds every ball.
    const Inside clip = inside_box(o, d, box.min, box.max, limit);
    if (clip.enter > clip.leave) return;
    const double t0 = clip.enter, t1 = clip.leave;

    const CellKey lowest = cells.key_of(box.min), highest = cells.key_of(box.max);
    // The balls of the 27 cells around the first cell, then at each step only those of the 9
    // cells that come into reach (the others were tested already), as lanes for the SIMD kernel.
    thread_local SphereScratch lanes;
    walk_cells(cells, o, d, t0, t1, lowest, highest, [&](const CellKey& key, double entered, std::uint32_t layer) {
        if (layer != detail::Cells::kAllNear && best && entered > best->distance) return false;
        lanes.n = 0;
        cells.for_each_near(key, [&](std::uint32_t s, const auto&) { lanes.push(s, balls.view_position(s), balls.radius[s]); },
                           layer);
        detail::simd_kernels().ray_sphere(o, d, lanes.spheres(), std::span(lanes.out).first(lanes.n));
        for (std::size_t k = 0; k < lanes.n; ++k) {
            const double t = lanes.out[k];
            if (!(t >= 0.0 && t <= limit)) continue;
            const std::uint32_t s = lanes.slot[k];
            const Vec3 centre = balls.view_position(s);
            const Vec3 at = o + d * t;
            const Vec3 normal = (at == centre) ? normalize(-d) : normalize(at - centre);
            // Ties (t == limit) go to the ball with the smaller handle, never away from a static.
            if (!best || t < best->distance ||
                (best->target == RayHit::Target::Ball && balls.id[s].value < best->ball.value)) {
                limit = t;
                best = RayHit{RayHit::Target::Ball, t, at, normal, balls.id[s], 0};
            }
        }
        // A ball touching the ray beyond this point has its centre in a cell entered later.
        return !(best && best->distance < entered);
    });
}

}  // namespace

std::optional<RayHit> World::Impl::cast(const Ray& ray, const Box& box, const detail::FiniteNear* near) const {
    Cast found{ray.origin, ray.direction, std::nullopt, ray.max_distance};
    offer_planes(found, statics.planes());
    offer_cylinders(found, statics.cylinders());
    const FiniteHit nearest = nearest_finite(found, statics, near);
    if (nearest.t != INFINITY)
        found.offer(nearest.t, nearest.block ? RayHit::Target::Block : RayHit::Target::Capsule, nearest.normal, {}, nearest.index);
    if (balls.size() > 0) offer_balls(found, balls, cells, box);
    return found.best;
}

Box World::Impl::ball_bounds() const {
    const Box b = detail::centre_bounds(parallel, balls.size(), [&](std::size_t s) { return balls.view_position(s); });
    const Vec3 margin{max_radius, max_radius, max_radius};
    return {b.min - margin, b.max + margin};
}

std::optional<RayHit> World::ray_cast(const Ray& ray) const {
    validate(ray, "ray");
    const Impl& w = *impl_;
    return w.cast(ray, w.balls.size() > 0 ? w.ball_bounds() : Box{}, w.statics.finite_near_points(0.0).get());
}

void World::ray_cast(std::span<const Ray> rays, std::span<std::optional<RayHit>> hits) const {
    if (hits.size() != rays.size())
        detail::reject("hits", "must have one entry per ray (" + std::to_string(rays.size()) + "), got " +
                                   std::to_string(hits.size()));
    for (std::size_t k = 0; k < rays.size(); ++k) validate(rays[k], "rays[" + std::to_string(k) + "]");
    const Impl& w = *impl_;
    const Box bounds = w.balls.size() > 0 ? w.ball_bounds() : Box{};
    const auto near = w.statics.finite_near_points(0.0);  // shared by every ray of the batch
    w.parallel.for_blocks(rays.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t k = begin; k < end; ++k) hits[k] = w.cast(rays[k], bounds, near.get());
    });
}

}  // namespace ballistic
