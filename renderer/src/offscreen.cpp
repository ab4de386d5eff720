// Ballistic renderer — offscreen target: two frame slots, each with its colour and depth images,
// framebuffer, command buffer, fence and readback buffer.
#include "scene_pass.hpp"

#include <array>
#include <cstring>
#include <deque>

namespace ballistic::render {

namespace {
constexpr VkFormat kColorFormat = VK_FORMAT_R8G8B8A8_SRGB;
constexpr std::uint32_t kFramesInFlight = 2;
// A frame that takes longer than this on the device is reported as an error, not waited for.
constexpr std::uint64_t kFenceTimeoutNs = 120'000'000'000ull;
}  // namespace

struct OffscreenRenderer::Impl {
    struct Slot {
        vk::ImageResource color;
        vk::ImageResource depth;
        vk::Framebuffer framebuffer;
        vk::MappedBuffer readback;
        vk::Fence fence;
        VkCommandBuffer cmd = VK_NULL_HANDLE;
        bool read_back = false;
    };

    Gpu::Impl* gpu = nullptr;
    VkExtent2D extent{};
    ScenePass pass;
    vk::CommandPool commands;
    std::array<Slot, kFramesInFlight> slots;
    std::deque<std::uint32_t> pending;   // submitted, not finished, oldest first
    std::uint32_t next = 0;

    ~Impl() {
        // Nothing may be destroyed while the device still draws into it.
        if (gpu != nullptr && gpu->device != VK_NULL_HANDLE) vkDeviceWaitIdle(gpu->device);
    }
};

OffscreenRenderer::OffscreenRenderer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OffscreenRenderer::~OffscreenRenderer() = default;
OffscreenRenderer::OffscreenRenderer(OffscreenRenderer&&) noexcept = default;
OffscreenRenderer& OffscreenRenderer::operator=(OffscreenRenderer&&) noexcept = default;

int OffscreenRenderer::width() const { return static_cast<int>(impl_->extent.width); }
int OffscreenRenderer::height() const { return static_cast<int>(impl_->extent.height); }
int OffscreenRenderer::frames_in_flight() const { return static_cast<int>(impl_->pending.size()); }

Result<OffscreenRenderer> OffscreenRenderer::create(Gpu& gpu_handle, int width, int height) {
    Gpu::Impl& gpu = gpu_handle.impl();
    const auto limit = static_cast<int>(gpu.properties.limits.maxImageDimension2D);
    if (width <= 0 || height <= 0 || width > limit || height > limit) {
        return vk::error("create offscreen target", "size " + std::to_string(width) + "x" + std::to_string(height) +
                                                        " outside 1.." + std::to_string(limit));
    }
    auto impl = std::make_unique<Impl>();
    impl->gpu = &gpu;
    impl->extent = {static_cast<std::uint32_t>(width), static_cast<std::uint32_t>(height)};
    auto pass = ScenePass::create(gpu, kColorFormat, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, kFramesInFlight);
    if (!pass) return pass.error();
    impl->pass = std::move(pass.value());

    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = gpu.queue_family;
    VkCommandPool pool = VK_NULL_HANDLE;
    if (VkResult r = vkCreateCommandPool(gpu.device, &pool_info, nullptr, &pool); r != VK_SUCCESS) {
        return vk::error("create command pool", r);
    }
    impl->commands = vk::CommandPool(gpu.device, pool);

    for (Impl::Slot& slot : impl->slots) {
        auto color = vk::create_image(gpu.info(), kColorFormat, impl->extent,
                                      VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                                      VK_IMAGE_ASPECT_COLOR_BIT, "colour");
        if (!color) return color.error();
        slot.color = std::move(color.value());
        auto depth = vk::create_image(gpu.info(), ScenePass::kDepthFormat, impl->extent,
                                      VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, VK_IMAGE_ASPECT_DEPTH_BIT, "depth");
        if (!depth) return depth.error();
        slot.depth = std::move(depth.value());

        const std::array<VkImageView, 2> views{slot.color.view.get(), slot.depth.view.get()};
        VkFramebufferCreateInfo fb{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
        fb.renderPass = impl->pass.render_pass();
        fb.attachmentCount = static_cast<std::uint32_t>(views.size());
        fb.pAttachments = views.data();
        fb.width = impl->extent.width;
        fb.height = impl->extent.height;
        fb.layers = 1;
        VkFramebuffer framebuffer = VK_NULL_HANDLE;
        if (VkResult r = vkCreateFramebuffer(gpu.device, &fb, nullptr, &framebuffer); r != VK_SUCCESS) {
            return vk::error("create framebuffer", r);
        }
        slot.framebuffer = vk::Framebuffer(gpu.device, framebuffer);

        auto readback = vk::create_mapped_buffer(gpu.info(), VkDeviceSize{impl->extent.width} * impl->extent.height * 4,
                                                 VK_BUFFER_USAGE_TRANSFER_DST_BIT, "readback");
        if (!readback) return readback.error();
        slot.readback = std::move(readback.value());

        VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        fence_info.flags = VK_FENCE_CREATE_SIGNALED_BIT;
        VkFence fence = VK_NULL_HANDLE;
        if (VkResult r = vkCreateFence(gpu.device, &fence_info, nullptr, &fence); r != VK_SUCCESS) {
            return vk::error("create fence", r);
        }
        slot.fence = vk::Fence(gpu.device, fence);

        VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        allocate.commandPool = pool;
        allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        allocate.commandBufferCount = 1;
        if (VkResult r = vkAllocateCommandBuffers(gpu.device, &allocate, &slot.cmd); r != VK_SUCCESS) {
            return vk::error("allocate command buffer", r);
        }
    }
    return OffscreenRenderer(std::move(impl));
}

Status OffscreenRenderer::submit(const World& world, const Camera& camera, const FrameStyle& style,
                                 const Explosions* explosions, bool read_back) {
    Impl& s = *impl_;
    if (s.pending.size() >= kFramesInFlight) {
        return vk::error("submit frame", "two frames already in flight: finish() the oldest first");
    }
    const std::uint32_t index = s.next;
    Impl::Slot& slot = s.slots[index];
    const VkDevice device = s.gpu->device;
    const VkFence fence = slot.fence.get();
    if (Status st = s.pass.prepare(index, world, camera, style, explosions, s.extent); !st) return st;

    if (VkResult r = vkResetCommandBuffer(slot.cmd, 0); r != VK_SUCCESS) return vk::error("reset command buffer", r);
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (VkResult r = vkBeginCommandBuffer(slot.cmd, &begin); r != VK_SUCCESS) return vk::error("begin command buffer", r);
    s.pass.record(slot.cmd, index, slot.framebuffer.get(), s.extent);
    if (read_back) {
        VkBufferImageCopy copy{};
        copy.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
        copy.imageExtent = {s.extent.width, s.extent.height, 1};
        vkCmdCopyImageToBuffer(slot.cmd, slot.color.image.get(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                               slot.readback.buffer.get(), 1, &copy);
        VkBufferMemoryBarrier to_host{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
        to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        to_host.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
        to_host.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
        to_host.buffer = slot.readback.buffer.get();
        to_host.size = VK_WHOLE_SIZE;
        vkCmdPipelineBarrier(slot.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 0, nullptr, 1,
                             &to_host, 0, nullptr);
    }
    if (VkResult r = vkEndCommandBuffer(slot.cmd); r != VK_SUCCESS) return vk::error("end command buffer", r);

    if (VkResult r = vkResetFences(device, 1, &fence); r != VK_SUCCESS) return vk::error("reset fence", r);
    VkSubmitInfo submit_info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit_info.commandBufferCount = 1;
    submit_info.pCommandBuffers = &slot.cmd;
    if (VkResult r = vkQueueSubmit(s.gpu->queue, 1, &submit_info, fence); r != VK_SUCCESS) {
        return vk::error("submit frame", r);
    }
    slot.read_back = read_back;
    s.pending.push_back(index);
    s.next = (index + 1) % kFramesInFlight;
    return ok();
}

Result<Image> OffscreenRenderer::finish() {
    Impl& s = *impl_;
    if (s.pending.empty()) return vk::error("finish frame", "no frame was submitted");
    const std::uint32_t index = s.pending.front();
    Impl::Slot& slot = s.slots[index];
    const VkFence fence = slot.fence.get();
    const VkResult r = vkWaitForFences(s.gpu->device, 1, &fence, VK_TRUE, kFenceTimeoutNs);
    if (r == VK_TIMEOUT) return vk::error("finish frame", "the device took over two minutes to draw one frame");
    if (r != VK_SUCCESS) return vk::error("finish frame", r);
    s.pending.pop_front();
    Image image;
    if (!slot.read_back) return image;
    image.width = static_cast<int>(s.extent.width);
    image.height = static_cast<int>(s.extent.height);
    image.rgba.resize(static_cast<std::size_t>(s.extent.width) * s.extent.height * 4);
    std::memcpy(image.rgba.data(), slot.readback.mapped, image.rgba.size());
    return image;
}

Result<Image> OffscreenRenderer::render(const World& world, const Camera& camera, const FrameStyle& style,
                                        const Explosions* explosions) {
    if (Status st = submit(world, camera, style, explosions, true); !st) return st.error();
    // Frames submitted earlier come out first; the last one out is this one.
    Result<Image> image = finish();
    while (image && !impl_->pending.empty()) image = finish();
    return image;
}

}  // namespace ballistic::render
