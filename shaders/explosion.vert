#version 450
// The lesson's explosions: a camera-facing square per collision point that grows and fades.
#include "common.glsl"

layout(std430, set = 0, binding = kBindingExplosions) readonly buffer Explosions {
    ExplosionInstance explosions[];
};

layout(location = 0) out vec2 v_corner;
layout(location = 1) flat out float v_fade;

void main() {
    ExplosionInstance e = explosions[gl_InstanceIndex];
    vec2 corner = vec2((gl_VertexIndex & 1) == 0 ? -1.0 : 1.0, (gl_VertexIndex & 2) == 0 ? -1.0 : 1.0);
    vec3 centre = (frame.view * vec4(e.x, e.y, e.z, 1.0)).xyz;
    // Pulled towards the eye by its radius so that the wall or ball it sits on does not cut it.
    vec3 towards_eye = normalize(-centre);
    vec3 p = centre + towards_eye * e.radius + vec3(corner * e.radius, 0.0);
    v_corner = corner;
    v_fade = e.fade;
    gl_Position = frame.proj * vec4(p, 1.0);
}
