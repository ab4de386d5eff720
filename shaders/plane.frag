#version 450
// Checkerboard wall, cut to the room: fragments outside any other wall are discarded.
#include "common.glsl"

layout(push_constant) uniform Push {
    PlanePush plane;
};

layout(location = 0) in vec3 v_world;
layout(location = 0) out vec4 out_color;

void main() {
    if (!inside_room(v_world, int(plane.normal.w))) discard;
    vec3 n = plane.normal.xyz;
    vec3 t = plane.tangent.xyz;
    vec3 s = cross(n, t);
    float cell = plane.tangent.w;
    float u = floor(dot(v_world, t) / cell);
    float v = floor(dot(v_world, s) / cell);
    float checker = mod(u + v, 2.0) < 0.5 ? 1.0 : 0.72;
    vec3 normal_view = normalize(mat3(frame.view) * n);
    vec3 view_pos = (frame.view * vec4(v_world, 1.0)).xyz;
    out_color = vec4(shade(plane.color.rgb * checker, normal_view, normalize(-view_pos)), 1.0);
}
