#version 450
// Sphere impostors: one point (1 vertex) or one triangle (3 vertices) per ball that covers the
// exact screen bounds of the perspective-projected sphere; the fragment shader does the rest.
#include "common.glsl"

// 0: point sprites, 1: one screen-aligned triangle per ball.
layout(constant_id = 0) const uint kPrimitive = 0u;
// 0: instance i draws ball i; 1: instance i draws ball near_list[i] (balls that may be too large
// on screen for a point sprite).
layout(constant_id = 1) const uint kFromNearList = 0u;

layout(std430, set = 0, binding = kBindingBalls) readonly buffer Balls {
    BallInstance balls[];
};
layout(std430, set = 0, binding = kBindingNearList) readonly buffer NearList {
    uint near_list[];
};

layout(location = 0) flat out vec4 v_sphere;   // view-space centre, radius
layout(location = 1) flat out vec3 v_color;

// Slopes x/d of the two lines through the eye tangent to a circle at lateral offset c and
// depth d with radius r (Mara & McGuire 2013, 2D case); needs d > r.
vec2 tangent_slopes(float c, float d, float r) {
    float t = sqrt(max(c * c + d * d - r * r, 0.0));
    float denom = d * d - r * r;
    return vec2(c * d - r * t, c * d + r * t) / denom;
}

void main() {
    uint index = kFromNearList == 0u ? uint(gl_InstanceIndex) : near_list[gl_InstanceIndex];
    uint corner = uint(gl_VertexIndex);
    BallInstance b = balls[index];

    vec3 c = (frame.view * vec4(b.x, b.y, b.z, 1.0)).xyz;
    float d = -c.z;
    float r = b.radius;
    float near = frame.proj[3][2] / frame.proj[2][2];  // from z_clip = A z + B: near = B / A
    gl_PointSize = 1.0;
    // Balls that reach the near plane, and the hook camera's own ball, are not drawn.
    if (d - r <= abs(near) || b.id == frame.hidden) {
        gl_Position = vec4(0.0, 0.0, -2.0, 1.0);  // outside the clip volume: discarded
        v_sphere = vec4(0.0);
        v_color = vec3(0.0);
        return;
    }

    vec2 sx = tangent_slopes(c.x, d, r) * frame.proj[0][0];
    vec2 sy = tangent_slopes(c.y, d, r) * frame.proj[1][1];
    vec2 lo = vec2(min(sx.x, sx.y), min(sy.x, sy.y));
    vec2 hi = vec2(max(sx.x, sx.y), max(sy.x, sy.y));
    // Depth of the sphere's nearest point: fragments only ever lie behind it (depth_greater).
    float z = view_depth(vec3(0.0, 0.0, -(d - r)));

    if (kPrimitive == 0u) {
        vec2 size_px = (hi - lo) * 0.5 * frame.viewport.xy;
        float size = max(size_px.x, size_px.y) + 1.0;
        // Too large for a point: the near-list pass draws it as a triangle.
        if (size > frame.max_point_size) {
            gl_Position = vec4(0.0, 0.0, -2.0, 1.0);
            return;
        }
        gl_PointSize = size;
        gl_Position = vec4((lo + hi) * 0.5, z, 1.0);
    } else {
        // Right triangle whose legs are twice the rectangle's sides: it contains the rectangle.
        vec2 p = lo;
        if (corner == 1u) p.x = lo.x + 2.0 * (hi.x - lo.x);
        if (corner == 2u) p.y = lo.y + 2.0 * (hi.y - lo.y);
        gl_Position = vec4(p, z, 1.0);
    }

    v_sphere = vec4(c, r);
    vec3 color;
    if (frame.color_mode == kColorBySpeed) {
        float s = b.speed * frame.speed_scale;
        color = vec3(ballistic_speed_color(s, 0u), ballistic_speed_color(s, 1u), ballistic_speed_color(s, 2u));
    } else {
        color = vec3(ballistic_id_color(b.id, 0u), ballistic_id_color(b.id, 1u), ballistic_id_color(b.id, 2u));
    }
    if (b.speed < 0.0) color = vec3(ballistic_sleeping_color(0u), ballistic_sleeping_color(1u), ballistic_sleeping_color(2u));
    if (b.id == frame.picked) color = vec3(1.0, 0.95, 0.2);
    v_color = color;
}
