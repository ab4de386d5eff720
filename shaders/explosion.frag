#version 450
// Radial glow, white-hot in the middle, orange at the rim; blended additively.
#include "common.glsl"

layout(location = 0) in vec2 v_corner;
layout(location = 1) flat in float v_fade;
layout(location = 0) out vec4 out_color;

void main() {
    float r = length(v_corner);
    if (r > 1.0) discard;
    float glow = (1.0 - r * r) * v_fade;
    vec3 color = mix(vec3(1.0, 0.35, 0.05), vec3(1.0, 0.9, 0.6), 1.0 - r);
    out_color = vec4(color * glow, glow);
}
