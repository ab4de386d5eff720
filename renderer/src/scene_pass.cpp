// Ballistic renderer — render pass, pipelines and per-frame data of the scene.
#include "scene_pass.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace ballistic::render {
namespace {

// SPIR-V compiled at build time by glslc (-mfmt=num) from shaders/.
const std::uint32_t kBallsVert[] = {
#include "balls.vert.inc"
};
const std::uint32_t kBallsFrag[] = {
#include "balls.frag.inc"
};
const std::uint32_t kPlaneVert[] = {
#include "plane.vert.inc"
};
const std::uint32_t kPlaneFrag[] = {
#include "plane.frag.inc"
};
const std::uint32_t kCylinderVert[] = {
#include "cylinder.vert.inc"
};
const std::uint32_t kCylinderFrag[] = {
#include "cylinder.frag.inc"
};
const std::uint32_t kExplosionVert[] = {
#include "explosion.vert.inc"
};
const std::uint32_t kExplosionFrag[] = {
#include "explosion.frag.inc"
};

struct PipelineDef {
    const char* name;
    std::span<const std::uint32_t> vert;
    std::span<const std::uint32_t> frag;
    VkPrimitiveTopology topology;
    bool depth_write = true;
    bool additive = false;
    const VkSpecializationInfo* vert_constants = nullptr;
};

Result<vk::Pipeline> create_pipeline(VkDevice device, VkRenderPass pass, VkPipelineLayout layout, const PipelineDef& def) {
    auto vert = vk::create_shader(device, def.vert.data(), def.vert.size_bytes(), def.name);
    if (!vert) return vert.error();
    auto frag = vk::create_shader(device, def.frag.data(), def.frag.size_bytes(), def.name);
    if (!frag) return frag.error();

    std::array<VkPipelineShaderStageCreateInfo, 2> stages{};
    stages[0] = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    stages[0].stage = VK_SHADER_STAGE_VERTEX_BIT;
    stages[0].module = vert->get();
    stages[0].pName = "main";
    stages[0].pSpecializationInfo = def.vert_constants;
    stages[1] = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    stages[1].stage = VK_SHADER_STAGE_FRAGMENT_BIT;
    stages[1].module = frag->get();
    stages[1].pName = "main";

    // Every shader builds its vertices from gl_VertexIndex / gl_InstanceIndex and storage buffers.
    VkPipelineVertexInputStateCreateInfo input{VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
    VkPipelineInputAssemblyStateCreateInfo assembly{VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
    assembly.topology = def.topology;
    VkPipelineViewportStateCreateInfo viewport{VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
    viewport.viewportCount = 1;
    viewport.scissorCount = 1;
    VkPipelineRasterizationStateCreateInfo raster{VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
    raster.polygonMode = VK_POLYGON_MODE_FILL;
    raster.cullMode = VK_CULL_MODE_NONE;
    raster.frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE;
    raster.lineWidth = 1.0f;
    VkPipelineMultisampleStateCreateInfo multisample{VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
    multisample.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
    VkPipelineDepthStencilStateCreateInfo depth{VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO};
    depth.depthTestEnable = VK_TRUE;
    depth.depthWriteEnable = def.depth_write ? VK_TRUE : VK_FALSE;
    depth.depthCompareOp = VK_COMPARE_OP_LESS;
    VkPipelineColorBlendAttachmentState attachment{};
    attachment.colorWriteMask =
        VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT | VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT;
    if (def.additive) {
        // The explosion shader outputs premultiplied glow: add it onto what is there.
        attachment.blendEnable = VK_TRUE;
        attachment.srcColorBlendFactor = VK_BLEND_FACTOR_ONE;
        attachment.dstColorBlendFactor = VK_BLEND_FACTOR_ONE;
        attachment.colorBlendOp = VK_BLEND_OP_ADD;
        attachment.srcAlphaBlendFactor = VK_BLEND_FACTOR_ZERO;
        attachment.dstAlphaBlendFactor = VK_BLEND_FACTOR_ONE;
        attachment.alphaBlendOp = VK_BLEND_OP_ADD;
    }
    VkPipelineColorBlendStateCreateInfo blend{VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
    blend.attachmentCount = 1;
    blend.pAttachments = &attachment;
    const std::array<VkDynamicState, 2> dynamic_states{VK_DYNAMIC_STATE_VIEWPORT, VK_DYNAMIC_STATE_SCISSOR};
    VkPipelineDynamicStateCreateInfo dynamic{VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO};
    dynamic.dynamicStateCount = static_cast<std::uint32_t>(dynamic_states.size());
    dynamic.pDynamicStates = dynamic_states.data();

    VkGraphicsPipelineCreateInfo info{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
    info.stageCount = static_cast<std::uint32_t>(stages.size());
    info.pStages = stages.data();
    info.pVertexInputState = &input;
    info.pInputAssemblyState = &assembly;
    info.pViewportState = &viewport;
    info.pRasterizationState = &raster;
    info.pMultisampleState = &multisample;
    info.pDepthStencilState = &depth;
    info.pColorBlendState = &blend;
    info.pDynamicState = &dynamic;
    info.layout = layout;
    info.renderPass = pass;
    info.subpass = 0;
    VkPipeline pipeline = VK_NULL_HANDLE;
    if (VkResult r = vkCreateGraphicsPipelines(device, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline); r != VK_SUCCESS) {
        return vk::error(std::string("create ") + def.name + " pipeline", r);
    }
    return vk::Pipeline(device, pipeline);
}

Result<vk::RenderPass> create_render_pass(VkDevice device, VkFormat color_format, VkImageLayout final_layout) {
    std::array<VkAttachmentDescription, 2> attachments{};
    attachments[0].format = color_format;
    attachments[0].samples = VK_SAMPLE_COUNT_1_BIT;
    attachments[0].loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
    attachments[0].storeOp = VK_ATTACHMENT_STORE_OP_STORE;
    attachments[0].stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
    attachments[0].stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    attachments[0].initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    attachments[0].finalLayout = final_layout;
    attachments[1].format = ScenePass::kDepthFormat;
    attachments[1].samples = VK_SAMPLE_COUNT_1_BIT;
    attachments[1].loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
    attachments[1].storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    attachments[1].stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
    attachments[1].stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    attachments[1].initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    attachments[1].finalLayout = VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL;
    VkAttachmentReference color_ref{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
    VkAttachmentReference depth_ref{1, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL};
    VkSubpassDescription subpass{};
    subpass.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
    subpass.colorAttachmentCount = 1;
    subpass.pColorAttachments = &color_ref;
    subpass.pDepthStencilAttachment = &depth_ref;
    // The previous frame of the same attachments (and, for a swapchain, the acquire semaphore's
    // wait stage) must be done before this one clears them.
    VkSubpassDependency dependency{};
    dependency.srcSubpass = VK_SUBPASS_EXTERNAL;
    dependency.dstSubpass = 0;
    dependency.srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT | VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT;
    dependency.dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT | VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT;
    dependency.srcAccessMask = VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;
    dependency.dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;
    // The offscreen target copies the finished colour image to a buffer right after the pass.
    VkSubpassDependency readback{};
    readback.srcSubpass = 0;
    readback.dstSubpass = VK_SUBPASS_EXTERNAL;
    readback.srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    readback.dstStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT;
    readback.srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
    readback.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    const std::array<VkSubpassDependency, 2> dependencies{dependency, readback};
    VkRenderPassCreateInfo info{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
    info.attachmentCount = static_cast<std::uint32_t>(attachments.size());
    info.pAttachments = attachments.data();
    info.subpassCount = 1;
    info.pSubpasses = &subpass;
    info.dependencyCount = static_cast<std::uint32_t>(dependencies.size());
    info.pDependencies = dependencies.data();
    VkRenderPass pass = VK_NULL_HANDLE;
    if (VkResult r = vkCreateRenderPass(device, &info, nullptr, &pass); r != VK_SUCCESS) return vk::error("create render pass", r);
    return vk::RenderPass(device, pass);
}

gpu::mat4 to_gpu(const Mat4& m) {
    gpu::mat4 out{};
    std::copy(m.begin(), m.end(), out.m);
    return out;
}

Mat4 multiply(const Mat4& a, const Mat4& b) {
    Mat4 out{};
    for (int c = 0; c < 4; ++c) {
        for (int r = 0; r < 4; ++r) {
            float sum = 0.0f;
            for (int k = 0; k < 4; ++k) sum += a[static_cast<std::size_t>(k * 4 + r)] * b[static_cast<std::size_t>(c * 4 + k)];
            out[static_cast<std::size_t>(c * 4 + r)] = sum;
        }
    }
    return out;
}

gpu::vec4 vec4_of(Vec3 v, double w) {
    return {static_cast<float>(v.x), static_cast<float>(v.y), static_cast<float>(v.z), static_cast<float>(w)};
}

// A unit vector perpendicular to the unit vector n.
Vec3 perpendicular(Vec3 n) {
    const Vec3 helper = std::abs(n.y) < 0.9 ? Vec3{0.0, 1.0, 0.0} : Vec3{1.0, 0.0, 0.0};
    return normalize(cross(helper, n));
}

// Walls are checkered in cells of a power of two near a tenth of the scene's size.
double auto_checker_size(const World& world) {
    const double radius = frame_world(world).scene_radius;
    return std::exp2(std::round(std::log2(std::max(radius / 5.0, 1e-6))));
}

}  // namespace

Result<ScenePass> ScenePass::create(Gpu::Impl& gpu, VkFormat color_format, VkImageLayout final_layout,
                                    std::uint32_t frames_in_flight) {
    ScenePass pass;
    pass.gpu_ = &gpu;
    const VkDevice device = gpu.device;
    pass.primitive_ = gpu.large_points ? BallPrimitive::Points : BallPrimitive::Triangles;
    if (const char* forced = std::getenv("BALLISTIC_BALL_PRIMITIVE")) {
        if (std::string_view(forced) == "triangles") pass.primitive_ = BallPrimitive::Triangles;
        if (std::string_view(forced) == "points" && gpu.large_points) pass.primitive_ = BallPrimitive::Points;
    }

    auto render_pass = create_render_pass(device, color_format, final_layout);
    if (!render_pass) return render_pass.error();
    pass.render_pass_ = std::move(render_pass.value());

    std::array<VkDescriptorSetLayoutBinding, 4> bindings{};
    bindings[0] = {gpu::kBindingFrame, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1,
                   VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, nullptr};
    bindings[1] = {gpu::kBindingBalls, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_VERTEX_BIT, nullptr};
    bindings[2] = {gpu::kBindingExplosions, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_VERTEX_BIT, nullptr};
    bindings[3] = {gpu::kBindingNearList, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_VERTEX_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    set_info.bindingCount = static_cast<std::uint32_t>(bindings.size());
    set_info.pBindings = bindings.data();
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    if (VkResult r = vkCreateDescriptorSetLayout(device, &set_info, nullptr, &set_layout); r != VK_SUCCESS) {
        return vk::error("create descriptor set layout", r);
    }
    pass.set_layout_ = vk::DescriptorSetLayout(device, set_layout);

    const std::array<VkDescriptorPoolSize, 2> sizes{{{VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, frames_in_flight},
                                                     {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3 * frames_in_flight}}};
    VkDescriptorPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pool_info.maxSets = frames_in_flight;
    pool_info.poolSizeCount = static_cast<std::uint32_t>(sizes.size());
    pool_info.pPoolSizes = sizes.data();
    VkDescriptorPool pool = VK_NULL_HANDLE;
    if (VkResult r = vkCreateDescriptorPool(device, &pool_info, nullptr, &pool); r != VK_SUCCESS) {
        return vk::error("create descriptor pool", r);
    }
    pass.pool_ = vk::DescriptorPool(device, pool);

    VkPushConstantRange push{VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof(gpu::PlanePush)};
    VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &set_layout;
    layout_info.pushConstantRangeCount = 1;
    layout_info.pPushConstantRanges = &push;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    if (VkResult r = vkCreatePipelineLayout(device, &layout_info, nullptr, &layout); r != VK_SUCCESS) {
        return vk::error("create pipeline layout", r);
    }
    pass.layout_ = vk::PipelineLayout(device, layout);

    const bool points = pass.primitive_ == BallPrimitive::Points;
    const std::array<std::uint32_t, 2> main_constants{points ? 0u : 1u, 0u};
    const std::array<std::uint32_t, 2> near_constants{1u, 1u};
    const std::array<VkSpecializationMapEntry, 2> entries{{{0, 0, 4}, {1, 4, 4}}};
    const VkSpecializationInfo main_specialization{2, entries.data(), sizeof(main_constants), main_constants.data()};
    const VkSpecializationInfo near_specialization{2, entries.data(), sizeof(near_constants), near_constants.data()};
    const std::array<PipelineDef, 5> defs{{
        {"balls", kBallsVert, kBallsFrag, points ? VK_PRIMITIVE_TOPOLOGY_POINT_LIST : VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST,
         true, false, &main_specialization},
        {"near balls", kBallsVert, kBallsFrag, VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST, true, false, &near_specialization},
        {"planes", kPlaneVert, kPlaneFrag, VK_PRIMITIVE_TOPOLOGY_TRIANGLE_STRIP},
        {"cylinders", kCylinderVert, kCylinderFrag, VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST},
        {"explosions", kExplosionVert, kExplosionFrag, VK_PRIMITIVE_TOPOLOGY_TRIANGLE_STRIP, false, true},
    }};
    std::array<vk::Pipeline*, 5> targets{&pass.balls_, &pass.near_balls_, &pass.planes_, &pass.cylinders_, &pass.explosions_};
    for (std::size_t i = 0; i < defs.size(); ++i) {
        if (targets[i] == &pass.near_balls_ && !points) continue;
        auto pipeline = create_pipeline(device, pass.render_pass_.get(), layout, defs[i]);
        if (!pipeline) return pipeline.error();
        *targets[i] = std::move(pipeline.value());
    }

    pass.slots_.resize(frames_in_flight);
    for (Slot& slot : pass.slots_) {
        VkDescriptorSetAllocateInfo allocate{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        allocate.descriptorPool = pool;
        allocate.descriptorSetCount = 1;
        allocate.pSetLayouts = &set_layout;
        if (VkResult r = vkAllocateDescriptorSets(device, &allocate, &slot.set); r != VK_SUCCESS) {
            return vk::error("allocate descriptor set", r);
        }
        auto uniforms = vk::create_mapped_buffer(gpu.info(), sizeof(gpu::FrameUniforms),
                                                 VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, "frame uniform");
        if (!uniforms) return uniforms.error();
        slot.uniforms = std::move(uniforms.value());
        if (Status s = pass.ensure_capacity(slot, 1024, 256, 256); !s) return s.error();
    }
    return pass;
}

Status ScenePass::ensure_capacity(Slot& slot, std::size_t balls, std::size_t explosions, std::size_t near) {
    bool changed = false;
    const VkDeviceSize ball_bytes = std::max<std::size_t>(balls, 1) * sizeof(gpu::BallInstance);
    if (slot.balls.size < ball_bytes) {
        // Grow by half again so that a slowly growing world does not reallocate every frame.
        auto buffer = vk::create_mapped_buffer(gpu_->info(), std::max(ball_bytes, slot.balls.size * 3 / 2),
                                               VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, "ball instance");
        if (!buffer) return buffer.error();
        slot.balls = std::move(buffer.value());
        changed = true;
    }
    const VkDeviceSize explosion_bytes = std::max<std::size_t>(explosions, 1) * sizeof(gpu::ExplosionInstance);
    if (slot.explosions.size < explosion_bytes) {
        auto buffer = vk::create_mapped_buffer(gpu_->info(), std::max(explosion_bytes, slot.explosions.size * 3 / 2),
                                               VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, "explosion instance");
        if (!buffer) return buffer.error();
        slot.explosions = std::move(buffer.value());
        changed = true;
    }
    const VkDeviceSize near_bytes = std::max<std::size_t>(near, 1) * sizeof(std::uint32_t);
    if (slot.near_list.size < near_bytes) {
        auto buffer = vk::create_mapped_buffer(gpu_->info(), std::max(near_bytes, slot.near_list.size * 3 / 2),
                                               VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, "near list");
        if (!buffer) return buffer.error();
        slot.near_list = std::move(buffer.value());
        changed = true;
    }
    if (changed) write_descriptors(slot);
    return ok();
}

void ScenePass::write_descriptors(const Slot& slot) const {
    const VkDescriptorBufferInfo frame{slot.uniforms.buffer.get(), 0, VK_WHOLE_SIZE};
    const VkDescriptorBufferInfo balls{slot.balls.buffer.get(), 0, VK_WHOLE_SIZE};
    const VkDescriptorBufferInfo explosions{slot.explosions.buffer.get(), 0, VK_WHOLE_SIZE};
    const VkDescriptorBufferInfo near{slot.near_list.buffer.get(), 0, VK_WHOLE_SIZE};
    std::array<VkWriteDescriptorSet, 4> writes{};
    const std::array<std::pair<std::uint32_t, const VkDescriptorBufferInfo*>, 4> items{
        {{gpu::kBindingFrame, &frame}, {gpu::kBindingBalls, &balls}, {gpu::kBindingExplosions, &explosions},
         {gpu::kBindingNearList, &near}}};
    for (std::size_t i = 0; i < writes.size(); ++i) {
        writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[i].dstSet = slot.set;
        writes[i].dstBinding = items[i].first;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = i == 0 ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = items[i].second;
    }
    vkUpdateDescriptorSets(gpu_->device, static_cast<std::uint32_t>(writes.size()), writes.data(), 0, nullptr);
}

Status ScenePass::prepare(std::uint32_t index, const World& world, const Camera& camera, const FrameStyle& style,
                          const Explosions* explosions, VkExtent2D extent) {
    Slot& slot = slots_[index];
    const BallView view = world.balls();
    const std::size_t ball_count = view.x.size();
    const std::size_t explosion_count = (explosions != nullptr && style.explosions) ? explosions->live().size() : 0;
    if (Status s = ensure_capacity(slot, ball_count, explosion_count, 0); !s) return s;
    if (checker_size <= 0.0) checker_size = auto_checker_size(world);

    // Balls: straight from the SoA state into the mapped buffer, in parallel. With point sprites,
    // balls near the eye may need more than the largest point size: they are listed too and
    // drawn again as triangles. A ball's screen size is at most about 1.5 · 2r·f·(H/2)/(d − r)
    // (the 1.5 covers the stretching of off-centre spheres), so listing d < r (1 + 1.5 f H / max)
    // catches every one of them.
    const bool speeds = style.color == ColorMode::Speed;
    const bool points = primitive_ == BallPrimitive::Points;
    const double focal = 1.0 / std::tan(camera.fov_y_degrees * 3.14159265358979323846 / 360.0);
    slot.near.eye = camera.eye;
    slot.near.radius_factor = 1.0 + 1.5 * focal * extent.height / gpu_->properties.limits.pointSizeRange[1];
    if (style.tint_sleeping) slot.sleeping = world.sleeping_flags();
    else slot.sleeping.clear();
    const double max_speed = fill_instances(
        view, speeds, {static_cast<std::byte*>(slot.balls.mapped), ball_count * sizeof(gpu::BallInstance)},
        points ? &slot.near : nullptr, slot.sleeping);
    slot.ball_count = static_cast<std::uint32_t>(ball_count);
    if (!points) slot.near.indices.clear();
    if (Status s = ensure_capacity(slot, ball_count, explosion_count, slot.near.indices.size()); !s) return s;
    if (!slot.near.indices.empty()) {
        std::memcpy(slot.near_list.mapped, slot.near.indices.data(), slot.near.indices.size() * sizeof(std::uint32_t));
    }

    // Explosions: radius grows from 30 % to 100 % while the glow fades.
    auto* out = static_cast<gpu::ExplosionInstance*>(slot.explosions.mapped);
    slot.explosion_count = 0;
    if (explosion_count > 0) {
        const double now = world.time();
        const double lifetime = explosions->def().lifetime;
        for (const Explosions::Explosion& e : explosions->live()) {
            const double age = std::clamp((now - e.birth) / lifetime, 0.0, 1.0);
            if (age >= 1.0) continue;
            out[slot.explosion_count++] = {static_cast<float>(e.point.x), static_cast<float>(e.point.y),
                                           static_cast<float>(e.point.z), static_cast<float>(e.radius * (0.3 + 0.7 * age)),
                                           static_cast<float>(1.0 - age), 0.0f, 0.0f, 0.0f};
        }
    }

    // Camera and style.
    const double aspect = static_cast<double>(extent.width) / static_cast<double>(extent.height);
    const Mat4 view_matrix = camera.view();
    const Mat4 proj = camera.projection(aspect);
    gpu::FrameUniforms frame{};
    frame.view = to_gpu(view_matrix);
    frame.proj = to_gpu(proj);
    frame.view_proj = to_gpu(multiply(proj, view_matrix));
    frame.eye = vec4_of(camera.eye, 1.0);
    const Vec3 light = normalize(Vec3{0.35, 0.6, 0.72});   // view space: from above, right, behind the eye
    frame.light_dir = vec4_of(light, 0.0);
    frame.viewport = {static_cast<float>(extent.width), static_cast<float>(extent.height),
                      1.0f / static_cast<float>(extent.width), 1.0f / static_cast<float>(extent.height)};
    frame.background = {style.background[0], style.background[1], style.background[2], 1.0f};
    frame.color_mode = speeds ? gpu::kColorBySpeed : gpu::kColorById;
    frame.picked = style.picked ? style.picked.index() : gpu::kNoBall;
    frame.hidden = style.hidden ? style.hidden.index() : gpu::kNoBall;
    const double scale_speed = style.speed_scale > 0.0 ? style.speed_scale : max_speed;
    frame.speed_scale = scale_speed > 0.0 ? static_cast<float>(1.0 / scale_speed) : 0.0f;
    frame.max_point_size = gpu_->properties.limits.pointSizeRange[1];
    frame.lighting = style.lighting ? 1u : 0u;

    // Statics: squares and segments as long as the far plane is deep, centred under the eye, so
    // that every visible part of an infinite wall or column is drawn; capsules and blocks as they are.
    const double reach = camera.far;
    const auto planes = static_cast<std::uint32_t>(world.plane_count());
    frame.clip_plane_count = std::min(planes, gpu::kMaxClipPlanes);
    slot.planes.clear();
    for (std::uint32_t i = 0; i < planes; ++i) {
        const PlaneDef& plane = world.plane(i);
        const Vec3 n = plane.normal;
        if (i < gpu::kMaxClipPlanes) frame.clip_planes[i] = vec4_of(n, -dot(n, plane.point));
        // One-sided walls: seen from behind (from outside the room) they are not drawn.
        const double eye_side = dot(n, camera.eye - plane.point);
        if (eye_side <= 0.0) continue;
        const Vec3 centre = camera.eye - n * eye_side;
        const Vec3 tangent = perpendicular(n);
        gpu::PlanePush push{};
        push.normal = vec4_of(n, i < gpu::kMaxClipPlanes ? static_cast<double>(i) : -1.0);
        push.origin = vec4_of(centre, reach);
        push.tangent = vec4_of(tangent, checker_size);
        push.color = {kPlaneColor[0], kPlaneColor[1], kPlaneColor[2], 1.0f};
        slot.planes.push_back(push);
    }
    slot.cylinders.clear();
    for (std::uint32_t i = 0; i < world.cylinder_count(); ++i) {
        const CylinderDef& cylinder = world.cylinder(i);
        const Vec3 axis = cylinder.axis;
        const Vec3 centre = cylinder.point + axis * dot(axis, camera.eye - cylinder.point);
        gpu::CylinderPush push{};
        push.point = vec4_of(centre, cylinder.radius);
        push.axis = vec4_of(axis, reach);
        push.color = {kCylinderColor[0], kCylinderColor[1], kCylinderColor[2], 1.0f};
        slot.cylinders.push_back(push);
    }
    for (std::uint32_t i = 0; i < world.capsule_count(); ++i) {
        const CapsuleDef& capsule = world.capsule(i);
        const Vec3 along = capsule.b - capsule.a;
        const double half = 0.5 * length(along);
        gpu::CylinderPush push{};
        push.point = vec4_of((capsule.a + capsule.b) * 0.5, capsule.radius);
        push.axis = vec4_of(half > 0.0 ? along / (2.0 * half) : Vec3{0, 1, 0}, half);
        push.color = {kCylinderColor[0], kCylinderColor[1], kCylinderColor[2], 1.0f};
        push.pad = {static_cast<float>(gpu::kCapRings), 0.0f, 0.0f, 0.0f};
        slot.cylinders.push_back(push);
    }
    for (std::uint32_t i = 0; i < world.block_count(); ++i) {
        const BlockDef& block = world.block(i);
        gpu::CylinderPush push{};
        push.point = vec4_of(block.min, 0.0);
        push.axis = vec4_of(block.max, 0.0);
        push.color = {kCylinderColor[0], kCylinderColor[1], kCylinderColor[2], 1.0f};
        push.pad = {0.0f, 1.0f, 0.0f, 0.0f};
        slot.cylinders.push_back(push);
    }
    std::memcpy(slot.uniforms.mapped, &frame, sizeof(frame));
    return ok();
}

void ScenePass::record(VkCommandBuffer cmd, std::uint32_t index, VkFramebuffer framebuffer, VkExtent2D extent,
                       const std::function<void(VkCommandBuffer)>& overlay) const {
    const Slot& slot = slots_[index];
    std::array<VkClearValue, 2> clear{};
    const gpu::FrameUniforms* frame = static_cast<const gpu::FrameUniforms*>(slot.uniforms.mapped);
    clear[0].color = {{frame->background.x, frame->background.y, frame->background.z, 1.0f}};
    clear[1].depthStencil = {1.0f, 0};
    VkRenderPassBeginInfo begin{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
    begin.renderPass = render_pass_.get();
    begin.framebuffer = framebuffer;
    begin.renderArea = {{0, 0}, extent};
    begin.clearValueCount = static_cast<std::uint32_t>(clear.size());
    begin.pClearValues = clear.data();
    vkCmdBeginRenderPass(cmd, &begin, VK_SUBPASS_CONTENTS_INLINE);

    const VkViewport viewport{0.0f, 0.0f, static_cast<float>(extent.width), static_cast<float>(extent.height), 0.0f, 1.0f};
    const VkRect2D scissor{{0, 0}, extent};
    vkCmdSetViewport(cmd, 0, 1, &viewport);
    vkCmdSetScissor(cmd, 0, 1, &scissor);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, layout_.get(), 0, 1, &slot.set, 0, nullptr);

    if (slot.ball_count > 0) {
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, balls_.get());
        vkCmdDraw(cmd, primitive_ == BallPrimitive::Points ? 1u : 3u, slot.ball_count, 0, 0);
    }
    if (!slot.near.indices.empty()) {
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, near_balls_.get());
        vkCmdDraw(cmd, 3, static_cast<std::uint32_t>(slot.near.indices.size()), 0, 0);
    }
    const VkShaderStageFlags stages = VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT;
    if (!slot.planes.empty()) {
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, planes_.get());
        for (const gpu::PlanePush& plane : slot.planes) {
            vkCmdPushConstants(cmd, layout_.get(), stages, 0, sizeof(plane), &plane);
            vkCmdDraw(cmd, 4, 1, 0, 0);
        }
    }
    if (!slot.cylinders.empty()) {
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, cylinders_.get());
        for (const gpu::CylinderPush& cylinder : slot.cylinders) {
            vkCmdPushConstants(cmd, layout_.get(), stages, 0, sizeof(cylinder), &cylinder);
            const auto rows = 2 * static_cast<std::uint32_t>(cylinder.pad.x) + 1;  // a column: 1
            vkCmdDraw(cmd, cylinder.pad.y != 0.0f ? gpu::kBlockVertices : gpu::kCylinderSegments * 6 * rows, 1, 0, 0);
        }
    }
    if (slot.explosion_count > 0) {
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, explosions_.get());
        vkCmdDraw(cmd, 4, slot.explosion_count, 0, 0);
    }
    if (overlay) overlay(cmd);
    vkCmdEndRenderPass(cmd);
}

}  // namespace ballistic::render
