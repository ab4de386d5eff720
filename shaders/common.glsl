// Ballistic renderer — declarations shared by every shader: the frame block and lighting.
#include "shared.h"

layout(std140, set = 0, binding = kBindingFrame) uniform FrameBlock {
    FrameUniforms frame;
};

// Headlight-style Lambert + Blinn-Phong in view space; `flat` colours pass through unchanged so
// that pixel tests can compare exact values.
// The specular exponent is 32, by repeated squaring: pow() costs an exp and a log per pixel on a
// CPU rasteriser.
vec3 shade(vec3 base, vec3 normal_view, vec3 to_eye_view) {
    if (frame.lighting == 0u) return base;
    vec3 l = frame.light_dir.xyz;
    float diffuse = max(dot(normal_view, l), 0.0);
    vec3 h = normalize(l + to_eye_view);
    float s = max(dot(normal_view, h), 0.0);
    s *= s;
    s *= s;
    s *= s;
    s *= s;
    s *= s;
    return base * (0.25 + 0.75 * diffuse) + vec3(0.35 * s);
}

// Is a world point inside every clip plane (the room), except plane `skip`?
bool inside_room(vec3 p, int skip) {
    for (uint i = 0u; i < frame.clip_plane_count; ++i) {
        if (int(i) == skip) continue;
        vec4 plane = frame.clip_planes[i];
        if (dot(plane.xyz, p) + plane.w < -1e-3) return false;
    }
    return true;
}

// Depth (0..1) of a view-space point: (A z + B) / −z with A, B from the projection.
float view_depth(vec3 p) {
    return -frame.proj[2][2] - frame.proj[3][2] / p.z;
}

// View-space direction of the ray through this fragment's centre (not normalised, z = −1).
vec3 view_ray(vec2 frag_coord) {
    vec2 ndc = frag_coord * frame.viewport.zw * 2.0 - 1.0;
    return vec3(ndc.x / frame.proj[0][0], ndc.y / frame.proj[1][1], -1.0);
}
