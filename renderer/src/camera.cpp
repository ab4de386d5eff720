// Ballistic renderer — view and projection matrices, picking rays, orbit and hook cameras.
#include <ballistic/render/camera.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <optional>
#include <span>
#include <vector>

namespace ballistic::render {
namespace {

constexpr double kPitchLimit = 89.0 * std::numbers::pi / 180.0;  // an orbit never looks straight down

struct Basis {
    Vec3 right, up, back;   // camera x, y, z axes in world space (it looks along −back)
};

Basis basis(const Camera& camera) {
    const Vec3 back = normalize(camera.eye - camera.target);
    Vec3 right = cross(camera.up, back);
    // Looking straight along `up`: any right-hand axis will do.
    if (length(right) < 1e-12) right = cross(std::abs(back.x) < 0.9 ? Vec3{1, 0, 0} : Vec3{0, 1, 0}, back);
    right = normalize(right);
    return {right, cross(back, right), back};
}

double focal(const Camera& camera) {
    return 1.0 / std::tan(camera.fov_y_degrees * std::numbers::pi / 360.0);
}

// Points the orbit's camera (its direction kept) at the box lo..hi, as near as it can be with all
// eight corners inside the image of this aspect ratio (a twentieth of each side to spare), the
// box's picture centred: its target moves across the view until the corners' extents balance.
void set(Vec3& v, int d, double value) { (d == 0 ? v.x : d == 1 ? v.y : v.z) = value; }

void fit(OrbitCamera& orbit, Vec3 lo, Vec3 hi, double aspect) {
    const double tan_y = 0.95 / focal(Camera{.fov_y_degrees = orbit.fov_y_degrees});
    const double tan_x = tan_y * aspect;
    orbit.target = (lo + hi) * 0.5;
    orbit.distance = 1.0;
    const Basis axes = basis(orbit.camera(1.0, 2.0));
    for (int round = 0; round < 8; ++round) {
        std::array<Vec3, 8> corners;  // from the target
        for (int k = 0; k < 8; ++k)
            corners[static_cast<std::size_t>(k)] =
                Vec3{k & 1 ? hi.x : lo.x, k & 2 ? hi.y : lo.y, k & 4 ? hi.z : lo.z} - orbit.target;
        // The distance each corner needs, and where it lands (as a tangent of the view angle).
        double distance = 0.0;
        for (const Vec3& p : corners) {
            const double along = dot(p, axes.back);
            distance = std::max({distance, along + std::abs(dot(p, axes.right)) / tan_x,
                                 along + std::abs(dot(p, axes.up)) / tan_y});
        }
        orbit.distance = std::max(distance, 1e-3);
        double x_lo = 1e300, x_hi = -1e300, y_lo = 1e300, y_hi = -1e300;
        for (const Vec3& p : corners) {
            const double depth = orbit.distance - dot(p, axes.back);
            x_lo = std::min(x_lo, dot(p, axes.right) / depth);
            x_hi = std::max(x_hi, dot(p, axes.right) / depth);
            y_lo = std::min(y_lo, dot(p, axes.up) / depth);
            y_hi = std::max(y_hi, dot(p, axes.up) / depth);
        }
        // The shift of the target, at its own depth, that centres the corners' picture.
        orbit.target += axes.right * (0.5 * (x_lo + x_hi) * orbit.distance) + axes.up * (0.5 * (y_lo + y_hi) * orbit.distance);
    }
}

// The box from the 2nd to the 98th percentile of the balls' centres along each axis (of at most
// 4096 balls taken evenly), grown by the largest radius; all of them when there are fewer than 50.
std::optional<Box> ball_bulk(const BallView& balls) {
    const std::size_t n = balls.x.size();
    if (n == 0) return std::nullopt;
    const std::size_t stride = (n + 4095) / 4096;
    std::vector<double> values;
    values.reserve(n / stride + 1);
    Box box;
    const double radius = *std::max_element(balls.radius.begin(), balls.radius.end());
    const std::span<const double> columns[3] = {balls.x, balls.y, balls.z};
    for (int d = 0; d < 3; ++d) {
        values.clear();
        for (std::size_t i = 0; i < n; i += stride) values.push_back(columns[d][i]);
        const std::size_t cut = values.size() < 50 ? 0 : values.size() / 50;
        std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(cut), values.end());
        const double low = values[cut];
        const auto top = values.begin() + static_cast<std::ptrdiff_t>(values.size() - 1 - cut);
        std::nth_element(values.begin(), top, values.end());
        set(box.min, d, low - radius);
        set(box.max, d, *top + radius);
    }
    return box;
}

}  // namespace

Mat4 Camera::view() const {
    const Basis b = basis(*this);
    const auto f = [](double v) { return static_cast<float>(v); };
    return {f(b.right.x), f(b.up.x), f(b.back.x), 0.0f,
            f(b.right.y), f(b.up.y), f(b.back.y), 0.0f,
            f(b.right.z), f(b.up.z), f(b.back.z), 0.0f,
            f(-dot(b.right, eye)), f(-dot(b.up, eye)), f(-dot(b.back, eye)), 1.0f};
}

Mat4 Camera::projection(double aspect) const {
    const double f = focal(*this);
    // Vulkan clip space: y down, z in [0, 1]; z_clip = A z + B, w = −z.
    const double a = far / (near - far);
    const double b = near * far / (near - far);
    Mat4 m{};
    m[0] = static_cast<float>(f / aspect);
    m[5] = static_cast<float>(-f);
    m[10] = static_cast<float>(a);
    m[11] = -1.0f;
    m[14] = static_cast<float>(b);
    return m;
}

Ray Camera::pixel_ray(double px, double py, int width, int height) const {
    const Basis b = basis(*this);
    const double f = focal(*this);
    const double aspect = static_cast<double>(width) / static_cast<double>(height);
    const double ndc_x = 2.0 * px / width - 1.0;
    const double ndc_y = 2.0 * py / height - 1.0;   // down the image
    const Vec3 direction = b.right * (ndc_x * aspect / f) - b.up * (ndc_y / f) - b.back;
    return {eye, normalize(direction)};
}

Camera::Projected Camera::project(Vec3 point, int width, int height) const {
    const Basis b = basis(*this);
    const double f = focal(*this);
    const double aspect = static_cast<double>(width) / static_cast<double>(height);
    const Vec3 d = point - eye;
    const double depth = -dot(d, b.back);
    const double ndc_x = dot(d, b.right) * f / aspect / depth;
    const double ndc_y = -dot(d, b.up) * f / depth;
    return {(ndc_x + 1.0) * 0.5 * width, (ndc_y + 1.0) * 0.5 * height, depth};
}

Camera OrbitCamera::camera(double near, double far) const {
    const Vec3 offset{std::cos(pitch) * std::sin(yaw), std::sin(pitch), std::cos(pitch) * std::cos(yaw)};
    Camera c;
    c.eye = target + offset * distance;
    c.target = target;
    c.fov_y_degrees = fov_y_degrees;
    c.near = near;
    c.far = far;
    return c;
}

OrbitCamera OrbitCamera::looking(Vec3 eye, Vec3 target, double fov_y_degrees) {
    const Vec3 offset = eye - target;
    OrbitCamera orbit;
    orbit.target = target;
    orbit.distance = length(offset);
    orbit.yaw = std::atan2(offset.x, offset.z);
    orbit.pitch = std::clamp(std::asin(std::clamp(offset.y / orbit.distance, -1.0, 1.0)), -kPitchLimit, kPitchLimit);
    orbit.fov_y_degrees = fov_y_degrees;
    return orbit;
}

void OrbitCamera::rotate(double dx, double dy) {
    yaw += dx;
    pitch = std::clamp(pitch + dy, -kPitchLimit, kPitchLimit);
}

void OrbitCamera::zoom(double factor) { distance = std::max(distance * factor, 1e-6); }

void OrbitCamera::pan(double dx, double dy) {
    const Camera c = camera(1.0, 2.0);
    const Vec3 back = normalize(c.eye - c.target);
    const Vec3 right = normalize(cross(Vec3{0, 1, 0}, back));
    const Vec3 up = cross(back, right);
    target += (right * -dx + up * dy) * distance;
}

Framing frame_world(const World& world, double aspect) {
    // Two boxes: around everything (for the near and far planes), and around what the picture
    // frames: the same but with only the bulk of the balls, so that a few far ones do not shrink it.
    Box all{{1e300, 1e300, 1e300}, {-1e300, -1e300, -1e300}};
    Box framed = all;
    bool any = false;
    const auto include = [&](Box& box, Vec3 p, double r) {
        box.min = {std::min(box.min.x, p.x - r), std::min(box.min.y, p.y - r), std::min(box.min.z, p.z - r)};
        box.max = {std::max(box.max.x, p.x + r), std::max(box.max.y, p.y + r), std::max(box.max.z, p.z + r)};
        any = true;
    };
    const auto both = [&](Vec3 p, double r) {
        include(all, p, r);
        include(framed, p, r);
    };
    const BallView balls = world.balls();
    for (std::size_t i = 0; i < balls.x.size(); ++i) include(all, {balls.x[i], balls.y[i], balls.z[i]}, balls.radius[i]);
    if (const std::optional<Box> bulk = ball_bulk(balls)) {
        include(framed, bulk->min, 0.0);
        include(framed, bulk->max, 0.0);
    }
    for (std::uint32_t i = 0; i < world.plane_count(); ++i) both(world.plane(i).point, 0.0);
    for (std::uint32_t i = 0; i < world.cylinder_count(); ++i) both(world.cylinder(i).point, world.cylinder(i).radius);
    for (std::uint32_t i = 0; i < world.block_count(); ++i) {
        both(world.block(i).min, 0.0);
        both(world.block(i).max, 0.0);
    }
    for (std::uint32_t i = 0; i < world.capsule_count(); ++i) {
        both(world.capsule(i).a, world.capsule(i).radius);
        both(world.capsule(i).b, world.capsule(i).radius);
    }
    if (const auto& box = world.def().periodic) {
        both(box->min, 0.0);
        both(box->max, 0.0);
    }
    if (!any) all = framed = Box{{-1, -1, -1}, {1, 1, 1}};
    Framing framing;
    framing.scene_centre = (all.min + all.max) * 0.5;
    framing.scene_radius = std::max(length(all.max - all.min) * 0.5, 1e-3);
    // A board, thin along one horizontal axis, is seen nearly from the front.
    const Vec3 size = framed.max - framed.min;
    if (size.z < 0.25 * size.x || size.x < 0.25 * size.z) {
        framing.orbit.yaw = size.z < size.x ? 0.25 : std::numbers::pi / 2 - 0.25;
        framing.orbit.pitch = 0.2;
    }
    fit(framing.orbit, framed.min, framed.max, aspect);
    framing.near = framing.scene_radius * 1e-3;
    framing.far = framing.orbit.distance + framing.scene_radius * 8.0;
    return framing;
}

Camera hook_camera(const BallState& ball, Vec3 fallback_direction, double near, double far) {
    const double speed = length(ball.velocity);
    const Vec3 forward = speed > 1e-12 ? ball.velocity / speed : normalize(fallback_direction);
    // Behind the ball by three radii and lifted by one, looking along the velocity.
    Vec3 up{0.0, 1.0, 0.0};
    if (std::abs(dot(up, forward)) > 0.99) up = {1.0, 0.0, 0.0};
    Camera c;
    c.eye = ball.position - forward * (3.0 * ball.radius) + up * ball.radius;
    c.target = ball.position + forward * (10.0 * ball.radius);
    c.up = up;
    c.fov_y_degrees = 60.0;
    c.near = near;
    c.far = far;
    return c;
}

}  // namespace ballistic::render
