#version 450
// One square of an infinite wall, centred near the scene; the fragment shader trims it to the
// room the other walls bound.
#include "common.glsl"

layout(push_constant) uniform Push {
    PlanePush plane;
};

layout(location = 0) out vec3 v_world;

void main() {
    // Triangle strip: (−,−), (+,−), (−,+), (+,+)
    vec2 corner = vec2((gl_VertexIndex & 1) == 0 ? -1.0 : 1.0, (gl_VertexIndex & 2) == 0 ? -1.0 : 1.0);
    vec3 n = plane.normal.xyz;
    vec3 t = plane.tangent.xyz;
    vec3 s = cross(n, t);
    float h = plane.origin.w;
    vec3 p = plane.origin.xyz + (corner.x * t + corner.y * s) * h;
    v_world = p;
    gl_Position = frame.view_proj * vec4(p, 1.0);
}
