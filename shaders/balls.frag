#version 450
// Sphere impostor: intersects this pixel's view ray with the ball (the ray–sphere test of the
// picking article), writes the true depth and shades with the sphere's normal.
#include "common.glsl"

layout(location = 0) flat in vec4 v_sphere;
layout(location = 1) flat in vec3 v_color;
layout(location = 0) out vec4 out_color;
// Fragments never lie in front of the rasterised depth (the sphere's nearest point), so the
// depth test may still run early.
layout(depth_greater) out float gl_FragDepth;

void main() {
    vec3 dir = view_ray(gl_FragCoord.xy);
    vec3 c = v_sphere.xyz;
    float r = v_sphere.w;
    // |t dir − c|² = r²  →  a t² − 2 b t + k = 0
    float a = dot(dir, dir);
    float b = dot(dir, c);
    float k = dot(c, c) - r * r;
    float disc = b * b - a * k;
    if (disc < 0.0) discard;
    float t = (b - sqrt(disc)) / a;
    vec3 hit = t * dir;
    vec3 normal = (hit - c) / r;
    gl_FragDepth = view_depth(hit);
    out_color = vec4(shade(v_color, normal, normalize(-hit)), 1.0);
}
