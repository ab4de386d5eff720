#version 450
#include "common.glsl"

layout(push_constant) uniform Push {
    CylinderPush cylinder;
};

layout(location = 0) in vec3 v_world;
layout(location = 1) in vec3 v_normal;
layout(location = 0) out vec4 out_color;

void main() {
    if (!inside_room(v_world, -1)) discard;
    vec3 normal_view = normalize(mat3(frame.view) * normalize(v_normal));
    vec3 view_pos = (frame.view * vec4(v_world, 1.0)).xyz;
    out_color = vec4(shade(cylinder.color.rgb, normal_view, normalize(-view_pos)), 1.0);
}
