// Ballistic renderer — the drawing shared by the offscreen and the window targets: one render
// pass (colour + depth), the pipelines of balls, walls, columns and explosions, and the
// per-frame-in-flight buffers they read.
#pragma once

#include "gpu_impl.hpp"
#include "shared.h"

#include <ballistic/render/renderer.hpp>

#include <functional>
#include <vector>

namespace ballistic::render {

// How balls are rasterised. Points need one vertex per ball (lavapipe is vertex-bound) but are
// limited to the device's largest point size; triangles have no size limit.
enum class BallPrimitive : std::uint8_t { Points, Triangles };

class ScenePass {
public:
    static constexpr VkFormat kDepthFormat = VK_FORMAT_D32_SFLOAT;

    // `final_layout`: what the colour attachment is left in (TRANSFER_SRC for readback, PRESENT_SRC
    // for a swapchain).
    static Result<ScenePass> create(Gpu::Impl& gpu, VkFormat color_format, VkImageLayout final_layout,
                                    std::uint32_t frames_in_flight);

    VkRenderPass render_pass() const { return render_pass_.get(); }
    BallPrimitive primitive() const { return primitive_; }

    // Writes frame slot `slot`: ball instances straight from the world's SoA state, explosions,
    // camera and style. The slot's previous frame must have finished on the GPU.
    Status prepare(std::uint32_t slot, const World& world, const Camera& camera, const FrameStyle& style,
                   const Explosions* explosions, VkExtent2D extent);
    // Begins the render pass on `framebuffer`, draws what prepare() wrote, runs `overlay` (the
    // HUD) inside the pass and ends it.
    void record(VkCommandBuffer cmd, std::uint32_t slot, VkFramebuffer framebuffer, VkExtent2D extent,
                const std::function<void(VkCommandBuffer)>& overlay = {}) const;

    // Checker cell size of the walls (unit: length); chosen from the first world drawn when 0.
    double checker_size = 0.0;

private:
    struct Slot {
        vk::MappedBuffer uniforms;
        vk::MappedBuffer balls;
        vk::MappedBuffer explosions;
        vk::MappedBuffer near_list;
        VkDescriptorSet set = VK_NULL_HANDLE;
        NearQuery near;
        std::vector<std::uint8_t> sleeping;  // World::sleeping_flags(), with FrameStyle::tint_sleeping
        std::uint32_t ball_count = 0;
        std::uint32_t explosion_count = 0;
        std::vector<gpu::PlanePush> planes;
        std::vector<gpu::CylinderPush> cylinders;
    };

    Status ensure_capacity(Slot& slot, std::size_t balls, std::size_t explosions, std::size_t near);
    void write_descriptors(const Slot& slot) const;

    Gpu::Impl* gpu_ = nullptr;
    BallPrimitive primitive_ = BallPrimitive::Points;
    vk::RenderPass render_pass_;
    vk::DescriptorSetLayout set_layout_;
    vk::DescriptorPool pool_;
    vk::PipelineLayout layout_;
    vk::Pipeline balls_;        // every ball, as points (or triangles without large points)
    vk::Pipeline near_balls_;   // the near list as triangles (points only)
    vk::Pipeline planes_;
    vk::Pipeline cylinders_;
    vk::Pipeline explosions_;
    std::vector<Slot> slots_;
};

}  // namespace ballistic::render
