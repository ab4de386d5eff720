#version 450
// The side of a column: kCylinderSegments quads around the axis, generated from the vertex
// index (no vertex buffer); trimmed to the room by the fragment shader.
#include "common.glsl"

layout(push_constant) uniform Push {
    CylinderPush cylinder;
};

layout(location = 0) out vec3 v_world;
layout(location = 1) out vec3 v_normal;

void main() {
    const uint corner_segment[6] = uint[6](0u, 1u, 0u, 0u, 1u, 1u);
    const float corner_end[6] = float[6](-1.0, -1.0, 1.0, 1.0, -1.0, 1.0);
    uint quad = uint(gl_VertexIndex) / 6u;
    uint corner = uint(gl_VertexIndex) % 6u;
    float angle = 6.28318530718 * float(quad + corner_segment[corner]) / float(kCylinderSegments);

    vec3 axis = cylinder.axis.xyz;
    // Any unit vector not parallel to the axis gives the basis of the cross-section.
    vec3 helper = abs(axis.y) < 0.9 ? vec3(0.0, 1.0, 0.0) : vec3(1.0, 0.0, 0.0);
    vec3 u = normalize(cross(axis, helper));
    vec3 w = cross(axis, u);
    vec3 radial = cos(angle) * u + sin(angle) * w;
    vec3 p = cylinder.point.xyz + radial * cylinder.point.w + axis * (corner_end[corner] * cylinder.axis.w);
    v_world = p;
    v_normal = radial;
    gl_Position = frame.view_proj * vec4(p, 1.0);
}
