#version 450
// A static other than a plane, generated from the vertex index (no vertex buffer). A round one:
// the side of a column, or a capsule (its side and two hemispherical caps), kCylinderSegments
// quads around the axis per row of the profile; a column is one row, trimmed to the room by the
// fragment shader, a capsule 2 C + 1 rows with C rings per cap (CylinderPush.pad.x). A block
// (CylinderPush.pad.y = 1): its six faces, two triangles each, from min (point) to max (axis).
#include "common.glsl"

layout(push_constant) uniform Push {
    CylinderPush cylinder;
};

layout(location = 0) out vec3 v_world;
layout(location = 1) out vec3 v_normal;

void block() {
    const uint corner_u[6] = uint[6](0u, 1u, 0u, 0u, 1u, 1u);
    const uint corner_w[6] = uint[6](0u, 0u, 1u, 1u, 0u, 1u);
    uint face = uint(gl_VertexIndex) / 6u;
    uint corner = uint(gl_VertexIndex) % 6u;
    uint d = face / 2u, u = (d + 1u) % 3u, w = (d + 2u) % 3u;
    vec3 lo = cylinder.point.xyz, hi = cylinder.axis.xyz;
    vec3 p;
    p[d] = (face & 1u) != 0u ? hi[d] : lo[d];
    p[u] = corner_u[corner] != 0u ? hi[u] : lo[u];
    p[w] = corner_w[corner] != 0u ? hi[w] : lo[w];
    vec3 normal = vec3(0.0);
    normal[d] = (face & 1u) != 0u ? 1.0 : -1.0;
    v_world = p;
    v_normal = normal;
    gl_Position = frame.view_proj * vec4(p, 1.0);
}

void main() {
    if (cylinder.pad.y != 0.0) {
        block();
        return;
    }
    const uint corner_segment[6] = uint[6](0u, 1u, 0u, 0u, 1u, 1u);
    const uint corner_row[6] = uint[6](0u, 0u, 1u, 1u, 0u, 1u);
    uint quad = uint(gl_VertexIndex) / 6u;
    uint corner = uint(gl_VertexIndex) % 6u;
    uint segment = quad % kCylinderSegments;
    uint point = quad / kCylinderSegments + corner_row[corner];  // of the profile, 0 … 2 C + 1
    float angle = 6.28318530718 * float(segment + corner_segment[corner]) / float(kCylinderSegments);

    // The profile: from the pole of the cap at −half length to the equator (points 0 … C), then
    // from the other cap's equator to its pole (C + 1 … 2 C + 1); a column's two points are both
    // equators (polar angle π/2).
    uint rings = uint(cylinder.pad.x);
    bool far_end = point > rings;
    float step = rings > 0u ? 1.57079632679 / float(rings) : 0.0;
    float polar = far_end ? 1.57079632679 + step * float(point - rings - 1u)
                          : (rings > 0u ? step * float(point) : 1.57079632679);
    float along = (far_end ? 1.0 : -1.0) * cylinder.axis.w;

    vec3 axis = cylinder.axis.xyz;
    // Any unit vector not parallel to the axis gives the basis of the cross-section.
    vec3 helper = abs(axis.y) < 0.9 ? vec3(0.0, 1.0, 0.0) : vec3(1.0, 0.0, 0.0);
    vec3 u = normalize(cross(axis, helper));
    vec3 w = cross(axis, u);
    vec3 radial = cos(angle) * u + sin(angle) * w;
    vec3 normal = sin(polar) * radial - cos(polar) * axis;
    float radius = cylinder.point.w;
    vec3 p = cylinder.point.xyz + axis * along + normal * radius;
    v_world = p;
    v_normal = normal;
    gl_Position = frame.view_proj * vec4(p, 1.0);
}
