// Ballistic — the NeHe lesson's simulation loop (see lesson_reference.hpp).
#include "lesson_reference.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace ballistic::lesson {
namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();
constexpr double kZero = LessonSimulator::kZero;

// The lesson's TestIntersionPlane: ray (origin, unit direction) against the plane through
// `point` with unit normal `normal`; distance along the ray, or false when the ray is parallel
// or the plane lies behind the origin.
bool ray_plane(Vec3 point, Vec3 normal, Vec3 origin, Vec3 direction, double& distance) {
    const double dn = dot(direction, normal);
    if (dn < kZero && dn > -kZero) return false;
    const double l = dot(normal, point - origin) / dn;
    if (l < -kZero) return false;
    distance = l;
    return true;
}

// The lesson's TestIntersionCylinder (Graphics Gems II): ray (origin, unit direction) against
// the infinite cylinder (point, unit axis, radius). Distance, outward normal and hit point.
bool ray_cylinder(Vec3 point, Vec3 axis, double radius, Vec3 origin, Vec3 direction,
                  double& distance, Vec3& normal, Vec3& hit) {
    const Vec3 rc = origin - point;
    Vec3 n = cross(direction, axis);
    const double ln = length(n);
    if (ln < kZero && ln > -kZero) return false;
    n = n / ln;
    const double d = std::fabs(dot(rc, n));
    if (d > radius) return false;
    const double t = -dot(cross(rc, axis), n) / ln;
    const Vec3 o = normalize(cross(n, axis));
    const double s = std::fabs(std::sqrt(radius * radius - d * d) / dot(direction, o));
    const double in = t - s;
    const double out = t + s;
    if (in < -kZero) {
        if (out < -kZero) return false;
        distance = out;
    } else if (out < -kZero) {
        distance = in;
    } else {
        distance = in < out ? in : out;
    }
    hit = origin + direction * distance;
    const Vec3 hb = hit - point;
    normal = normalize(hb - axis * dot(hb, axis));
    return true;
}

// Distance of `p` from the infinite line through `origin` along unit `direction` (TRay::dist).
double line_distance(Vec3 origin, Vec3 direction, Vec3 p) {
    const Vec3 foot = origin + direction * dot(direction, p - origin);
    return length(p - foot);
}

}  // namespace

LessonSimulator::LessonSimulator(const scenes::Scene& scene) : gravity_(scene.world.gravity) {
    if (scene.world.periodic) {
        throw std::invalid_argument("LessonSimulator: the lesson has no periodic box");
    }
    for (const PlaneDef& p : scene.planes) planes_.push_back({p.point, normalize(p.normal)});
    for (const CylinderDef& c : scene.cylinders) {
        cylinders_.push_back({c.point, normalize(c.axis), c.radius});
    }
    for (const BallDef& b : scene.balls) {
        position_.push_back(b.position);
        velocity_.push_back(b.velocity);
        radius_.push_back(b.radius);
        mass_.push_back(b.mass);
    }
    old_position_ = position_;
}

double LessonSimulator::kinetic_energy() const {
    double e = 0.0;
    for (std::size_t i = 0; i < velocity_.size(); ++i) {
        e += 0.5 * mass_[i] * dot(velocity_[i], velocity_[i]);
    }
    return e;
}

void LessonSimulator::move_all(double t) {
    for (std::size_t j = 0; j < position_.size(); ++j) {
        position_[j] = old_position_[j] + velocity_[j] * t;
    }
}

// The lesson's FindBallCol: every pair, 150 slices of the remaining step.
bool LessonSimulator::find_ball_collision(double rest, PairHit& hit) {
    const double add = rest / kSlices;
    const std::size_t n = position_.size();
    double earliest = kNone;
    std::uint64_t pairs = 0;
    std::uint64_t slices = 0;
    for (std::size_t i = 0; i + 1 < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) {
            ++pairs;
            const Vec3 relative = velocity_[i] - velocity_[j];
            const double speed = length(relative);
            if (speed == 0.0) continue;
            const double sigma = radius_[i] + radius_[j];
            if (line_distance(old_position_[i], relative / speed, old_position_[j]) > sigma) {
                continue;
            }
            double t = 0.0;
            while (t < rest) {
                t += add;
                ++slices;
                const Vec3 p = old_position_[i] + relative * t;
                if (length(p - old_position_[j]) <= sigma) {
                    if (t - add < earliest) {
                        earliest = t - add;
                        hit = {earliest, i, j};
                    }
                    break;
                }
            }
        }
    }
    counts_.pair_tests += pairs;
    counts_.slice_tests += slices;
    return earliest != kNone;
}

void LessonSimulator::step(double dt) {
    for (Vec3& v : velocity_) v += gravity_ * dt;

    double rest = dt;
    int zero_time_events = 0;
    while (rest > kZero) {
        StaticHit nearest{kNone, 0, {}};
        for (std::size_t i = 0; i < position_.size(); ++i) {
            old_position_[i] = position_[i];
            position_[i] = position_[i] + velocity_[i] * rest;
            const double speed = length(velocity_[i]);
            if (speed == 0.0) continue;   // the lesson's tests all fail on a zero direction
            const Vec3 u = velocity_[i] / speed;
            const double travel = speed * rest;   // the lesson's rt2 = |new − old|
            // A candidate replaces the nearest when it lies inside the step and is not a ball
            // sitting on the surface and already leaving it.
            auto consider = [&](double distance, Vec3 normal) {
                const double t = distance * rest / travel;
                if (t <= nearest.time && t <= rest + kZero &&
                    !(distance <= kZero && dot(u, normal) > kZero)) {
                    nearest = {t, i, normal};
                }
            };
            for (const Plane& plane : planes_) {
                double distance = 0.0;
                const Vec3 offset_point = plane.point + plane.normal * radius_[i];
                if (ray_plane(offset_point, plane.normal, old_position_[i], u, distance)) {
                    consider(distance, plane.normal);
                }
            }
            for (const Cylinder& cylinder : cylinders_) {
                double distance = 0.0;
                Vec3 normal;
                Vec3 point;
                if (ray_cylinder(cylinder.point, cylinder.axis, cylinder.radius + radius_[i],
                                 old_position_[i], u, distance, normal, point)) {
                    consider(distance, normal);
                }
            }
        }

        PairHit pair{};
        if (find_ball_collision(rest, pair) && pair.time < nearest.time) {
            // The lesson's response: exchange the velocity components along the line of
            // centres (the masses enter as in its general formula).
            rest -= pair.time;
            const std::size_t a = pair.first;
            const std::size_t b = pair.second;
            const Vec3 pa = old_position_[a] + velocity_[a] * pair.time;
            const Vec3 pb = old_position_[b] + velocity_[b] * pair.time;
            const Vec3 axis = normalize(pb - pa);
            const Vec3 u1x = axis * dot(axis, velocity_[a]);
            const Vec3 u1y = velocity_[a] - u1x;
            const Vec3 u2x = axis * dot(axis, velocity_[b]);
            const Vec3 u2y = velocity_[b] - u2x;
            const double m1 = mass_[a];
            const double m2 = mass_[b];
            const Vec3 v1x = (u1x * m1 + u2x * m2 - (u1x - u2x) * m2) / (m1 + m2);
            const Vec3 v2x = (u1x * m1 + u2x * m2 - (u2x - u1x) * m1) / (m1 + m2);
            move_all(pair.time);
            velocity_[a] = v1x + u1y;
            velocity_[b] = v2x + u2y;
            ++counts_.ball_ball;
            zero_time_events = pair.time <= kZero ? zero_time_events + 1 : 0;
        } else if (nearest.time != kNone) {
            rest -= nearest.time;
            move_all(nearest.time);
            Vec3& v = velocity_[nearest.ball];
            const double speed = length(v);
            const Vec3 i = v / speed;
            const Vec3 n = nearest.normal;
            v = normalize(n * (2.0 * dot(n, -i)) + i) * speed;
            ++counts_.ball_static;
            zero_time_events = nearest.time <= kZero ? zero_time_events + 1 : 0;
        } else {
            rest = 0.0;   // every ball already sits at the end of the step
        }
        if (zero_time_events >= kMaxZeroTimeEvents) {
            // Finish the step without further events.
            for (std::size_t j = 0; j < position_.size(); ++j) position_[j] += velocity_[j] * rest;
            ++counts_.stalled_steps;
            break;
        }
    }
    time_ += dt;
}

}  // namespace ballistic::lesson
