// Ballistic renderer — view and projection matrices, picking rays, orbit and hook cameras.
#include <ballistic/render/camera.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>

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

Framing frame_world(const World& world) {
    Vec3 lo{1e300, 1e300, 1e300};
    Vec3 hi{-1e300, -1e300, -1e300};
    bool any = false;
    const auto include = [&](Vec3 p, double r) {
        lo = {std::min(lo.x, p.x - r), std::min(lo.y, p.y - r), std::min(lo.z, p.z - r)};
        hi = {std::max(hi.x, p.x + r), std::max(hi.y, p.y + r), std::max(hi.z, p.z + r)};
        any = true;
    };
    const BallView balls = world.balls();
    for (std::size_t i = 0; i < balls.x.size(); ++i) include({balls.x[i], balls.y[i], balls.z[i]}, balls.radius[i]);
    for (std::uint32_t i = 0; i < world.plane_count(); ++i) include(world.plane(i).point, 0.0);
    for (std::uint32_t i = 0; i < world.cylinder_count(); ++i) {
        include(world.cylinder(i).point, world.cylinder(i).radius);
    }
    for (std::uint32_t i = 0; i < world.block_count(); ++i) {
        include(world.block(i).min, 0.0);
        include(world.block(i).max, 0.0);
    }
    for (std::uint32_t i = 0; i < world.capsule_count(); ++i) {
        include(world.capsule(i).a, world.capsule(i).radius);
        include(world.capsule(i).b, world.capsule(i).radius);
    }
    if (const auto& box = world.def().periodic) {
        include(box->min, 0.0);
        include(box->max, 0.0);
    }
    Framing framing;
    if (!any) {
        lo = {-1, -1, -1};
        hi = {1, 1, 1};
    }
    framing.scene_centre = (lo + hi) * 0.5;
    framing.scene_radius = std::max(length(hi - lo) * 0.5, 1e-3);
    framing.orbit.target = framing.scene_centre;
    const double half_fov = framing.orbit.fov_y_degrees * std::numbers::pi / 360.0;
    framing.orbit.distance = framing.scene_radius / std::sin(half_fov) * 1.05;
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
