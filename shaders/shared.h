// Ballistic renderer — the contract between C++ and GLSL, included by both.
//
// Binding indices, push-constant ranges and the layout of every GPU-visible struct live here
// once, so the instance fill, the descriptor set layouts and the shaders cannot drift apart.
// Only the common subset of C++ and GLSL is used below the preamble: scalar members in
// std140/std430-compatible order (vec4 and mat4 first, then scalars in fours), `uint`, `float`,
// and functions that compile in both languages.
#ifndef BALLISTIC_SHADERS_SHARED_H
#define BALLISTIC_SHADERS_SHARED_H

#ifdef __cplusplus
#include <algorithm>
#include <cmath>
#include <cstdint>
namespace ballistic::render::gpu {
using uint = std::uint32_t;
struct vec4 {
    float x, y, z, w;
};
struct mat4 {
    float m[16];  // column-major, as GLSL reads it
};
inline float fract(float x) { return x - std::floor(x); }
inline float clamp01(float x) { return std::min(std::max(x, 0.0f), 1.0f); }
inline float absf(float x) { return std::fabs(x); }
#define BALLISTIC_CONST inline constexpr
#define BALLISTIC_FN inline
#else
#define BALLISTIC_CONST const
#define BALLISTIC_FN
float clamp01(float x) { return clamp(x, 0.0, 1.0); }
float absf(float x) { return abs(x); }
#endif

// Descriptor set 0, one set per frame in flight.
BALLISTIC_CONST uint kBindingFrame = 0;       // uniform FrameUniforms
BALLISTIC_CONST uint kBindingBalls = 1;       // storage BallInstance[]
BALLISTIC_CONST uint kBindingExplosions = 2;  // storage ExplosionInstance[]
BALLISTIC_CONST uint kBindingNearList = 3;    // storage uint[]: balls that may be too large for points

// Planes beyond this count are drawn but do not clip the other statics.
BALLISTIC_CONST uint kMaxClipPlanes = 16;

BALLISTIC_CONST uint kColorById = 0;
BALLISTIC_CONST uint kColorBySpeed = 1;
// No ball: the value of FrameUniforms.picked / hidden when nothing is picked or hidden.
BALLISTIC_CONST uint kNoBall = 0xffffffffu;

// Vertices per row of a round static's mesh: kCylinderSegments quads of two triangles; a column
// has one row, a capsule 2 kCapRings + 1. A block has 36 vertices (kBlockVertices).
BALLISTIC_CONST uint kCylinderSegments = 48;
BALLISTIC_CONST uint kCapRings = 8;
BALLISTIC_CONST uint kBlockVertices = 36;

// Per frame: camera, lighting, style and the planes that bound the room.
struct FrameUniforms {
    mat4 view;              // world → view (right-handed, camera looks along −z)
    mat4 proj;              // view → Vulkan clip space (y down, depth 0..1)
    mat4 view_proj;
    vec4 eye;               // camera position in world space (w unused)
    vec4 light_dir;         // unit direction towards the light, view space (w unused)
    vec4 viewport;          // width, height, 1/width, 1/height in pixels
    vec4 background;        // clear colour, linear RGB (a unused)
    vec4 clip_planes[16];   // kMaxClipPlanes world planes (xyz unit normal, w = −n·p): inside is ≥ 0
    uint clip_plane_count;
    uint color_mode;        // kColorById or kColorBySpeed
    uint picked;            // BallId index of the highlighted ball, or kNoBall
    uint hidden;            // BallId index of a ball not drawn (the hook camera's own), or kNoBall
    float speed_scale;      // 1 / speed shown as the hottest colour
    float max_point_size;   // device limit for the point-sprite path (pixels)
    uint lighting;          // 0 = flat colours (pixel tests), 1 = shaded
    uint pad0;
};

// One ball, written by the instance fill straight from the engine's SoA state (24 bytes).
struct BallInstance {
    float x;
    float y;
    float z;
    float radius;
    float speed;   // |v|, only filled when colouring by speed; −1: a sleeping ball drawn tinted
    uint id;       // BallId index: colour and picking highlight
};

// One explosion billboard (32 bytes).
struct ExplosionInstance {
    float x;
    float y;
    float z;
    float radius;   // current radius (world units)
    float fade;     // 1 at birth, 0 when it disappears
    float pad0;
    float pad1;
    float pad2;
};

// Per plane draw (push constant, 64 bytes).
struct PlanePush {
    vec4 normal;      // xyz unit normal, w = index of this plane among the clip planes (or −1)
    vec4 origin;      // centre of the drawn square, xyz; w = half size
    vec4 tangent;     // xyz unit vector in the plane; w = checker cell size
    vec4 color;       // base colour (rgb), a unused
};

// Per draw of a column, a capsule or a block (push constant, 64 bytes).
struct CylinderPush {
    vec4 point;       // centre of the drawn segment, xyz; w = radius (a block: its min corner)
    vec4 axis;        // unit axis, xyz; w = half length (a block: its max corner)
    vec4 color;
    vec4 pad;         // x: rings per cap (0: a column, without caps); y: 1 for a block
};

// Colour of a ball by its id: a well-mixed hash picks a hue, fixed saturation and value.
BALLISTIC_FN uint ballistic_hash(uint x) {
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    x ^= x >> 16u;
    return x;
}

// Channel c (0 red, 1 green, 2 blue) of HSV(h, s, v) with h in [0, 1), linear.
BALLISTIC_FN float ballistic_hsv_channel(float h, float s, float v, uint c) {
    float offset = c == 0u ? 0.0f : (c == 1u ? 2.0f / 3.0f : 1.0f / 3.0f);
    float p = absf(fract(h + offset) * 6.0f - 3.0f);
    return v * (1.0f - s + s * clamp01(p - 1.0f));
}

BALLISTIC_FN float ballistic_id_color(uint id, uint c) {
    float hue = float(ballistic_hash(id) >> 8u) / 16777216.0f;
    return ballistic_hsv_channel(hue, 0.75f, 0.9f, c);
}

// Sleeping balls, when tinted (BallInstance.speed −1): a muted slate, channel c.
BALLISTIC_FN float ballistic_sleeping_color(uint c) { return c == 0u ? 0.30f : (c == 1u ? 0.34f : 0.42f); }

// Speed ramp: blue (at rest) through green and yellow to red (speed ≥ 1 / speed_scale).
BALLISTIC_FN float ballistic_speed_color(float speed01, uint c) {
    float hue = (1.0f - clamp01(speed01)) * (2.0f / 3.0f);
    return ballistic_hsv_channel(hue, 0.85f, 0.95f, c);
}

#ifdef __cplusplus
static_assert(sizeof(FrameUniforms) == 3 * 64 + 4 * 16 + 16 * 16 + 8 * 4);
static_assert(sizeof(BallInstance) == 24);
static_assert(sizeof(ExplosionInstance) == 32);
static_assert(sizeof(PlanePush) == 64 && sizeof(CylinderPush) == 64);
}  // namespace ballistic::render::gpu
#undef BALLISTIC_CONST
#undef BALLISTIC_FN
#endif

#endif  // BALLISTIC_SHADERS_SHARED_H
