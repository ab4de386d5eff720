// Ballistic renderer — cameras: the view and projection the renderer uses, the rays picking
// casts, and the lesson's two cameras (orbit, and the hook camera riding behind a ball).
#pragma once

#include <ballistic/vec3.hpp>
#include <ballistic/world.hpp>

#include <array>

namespace ballistic::render {

// Column-major 4×4 matrix, as GLSL reads it.
using Mat4 = std::array<float, 16>;

struct Camera {
    Vec3 eye{0.0, 10.0, 40.0};      // (unit: length)
    Vec3 target{0.0, 0.0, 0.0};     // point looked at (unit: length)
    Vec3 up{0.0, 1.0, 0.0};         // need not be unit length or orthogonal to the view direction
    double fov_y_degrees = 45.0;    // vertical field of view
    double near = 0.1;              // (unit: length; > 0)
    double far = 1000.0;            // (unit: length; > near)

    // World → view: right-handed, the camera looks along −z, y up.
    Mat4 view() const;
    // View → Vulkan clip space for an image of this aspect ratio (width / height): y points down
    // the image, depth runs 0 (near) to 1 (far).
    Mat4 projection(double aspect) const;

    // The ray from the eye through the centre of pixel (px, py) of a width × height image; pixel
    // (0, 0) is the top-left one. Direction is unit length.
    Ray pixel_ray(double px, double py, int width, int height) const;
    // Pixel coordinates (x right, y down, pixel centres at +0.5) of a world point, and its
    // distance in front of the eye along the view direction (≤ 0: behind the camera).
    struct Projected {
        double x = 0.0;
        double y = 0.0;
        double depth = 0.0;
    };
    Projected project(Vec3 point, int width, int height) const;
};

// A camera circling a target: left-drag turns it, scroll zooms, right-drag pans.
struct OrbitCamera {
    Vec3 target;
    double distance = 60.0;      // (unit: length)
    double yaw = 0.6;            // about +y (radians)
    double pitch = 0.45;         // above the horizontal (radians), kept inside ±89°
    double fov_y_degrees = 45.0;

    Camera camera(double near, double far) const;
    // The orbit whose camera() sits at `eye` looking at `target` (the pitch kept inside ±89°).
    static OrbitCamera looking(Vec3 eye, Vec3 target, double fov_y_degrees);
    void rotate(double dx_radians, double dy_radians);
    void zoom(double factor);               // distance *= factor
    void pan(double dx, double dy);         // in units of distance, along the image axes
};

// Frames a whole world in an image of this aspect ratio (width / height): the box around the balls,
// the finite statics and the anchor points of the infinite ones, seen from the orbit's default
// direction, as near as its corners allow and centred; returns also a near/far pair that contains
// the scene seen from anywhere on the orbit.
struct Framing {
    OrbitCamera orbit;
    double near = 0.1;
    double far = 1000.0;
    double scene_radius = 1.0;
    Vec3 scene_centre;
};
Framing frame_world(const World& world, double aspect = 16.0 / 9.0);

// The lesson's hook camera: just behind and above the ball, looking along its velocity (along
// the last direction given when the ball is at rest).
Camera hook_camera(const BallState& ball, Vec3 fallback_direction, double near, double far);

}  // namespace ballistic::render
