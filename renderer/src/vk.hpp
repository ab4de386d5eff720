// Ballistic renderer — internal Vulkan helpers: owning handles, errors, buffers and images.
#pragma once

#include <ballistic/render/result.hpp>

#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>
#include <utility>

namespace ballistic::render::vk {

const char* result_name(VkResult result);

inline Error error(std::string stage, VkResult result) {
    return Error{std::move(stage), std::string("Vulkan call failed with ") + result_name(result),
                 static_cast<std::int32_t>(result)};
}
inline Error error(std::string stage, std::string reason) { return Error{std::move(stage), std::move(reason), 0}; }

// Owns one device-level object and destroys it with its device; moves transfer ownership.
template <class Handle, void (*Destroy)(VkDevice, Handle, const VkAllocationCallbacks*)>
class Owned {
public:
    Owned() = default;
    Owned(VkDevice device, Handle handle) : device_(device), handle_(handle) {}
    ~Owned() { reset(); }
    Owned(Owned&& other) noexcept
        : device_(other.device_), handle_(std::exchange(other.handle_, VK_NULL_HANDLE)) {}
    Owned& operator=(Owned&& other) noexcept {
        if (this != &other) {
            reset();
            device_ = other.device_;
            handle_ = std::exchange(other.handle_, VK_NULL_HANDLE);
        }
        return *this;
    }
    Owned(const Owned&) = delete;
    Owned& operator=(const Owned&) = delete;

    Handle get() const { return handle_; }
    explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }
    void reset() {
        if (handle_ != VK_NULL_HANDLE) Destroy(device_, handle_, nullptr);
        handle_ = VK_NULL_HANDLE;
    }

private:
    VkDevice device_ = VK_NULL_HANDLE;
    Handle handle_ = VK_NULL_HANDLE;
};

using Buffer = Owned<VkBuffer, vkDestroyBuffer>;
using Memory = Owned<VkDeviceMemory, vkFreeMemory>;
using Image = Owned<VkImage, vkDestroyImage>;
using ImageView = Owned<VkImageView, vkDestroyImageView>;
using RenderPass = Owned<VkRenderPass, vkDestroyRenderPass>;
using Framebuffer = Owned<VkFramebuffer, vkDestroyFramebuffer>;
using ShaderModule = Owned<VkShaderModule, vkDestroyShaderModule>;
using Pipeline = Owned<VkPipeline, vkDestroyPipeline>;
using PipelineLayout = Owned<VkPipelineLayout, vkDestroyPipelineLayout>;
using DescriptorSetLayout = Owned<VkDescriptorSetLayout, vkDestroyDescriptorSetLayout>;
using DescriptorPool = Owned<VkDescriptorPool, vkDestroyDescriptorPool>;
using CommandPool = Owned<VkCommandPool, vkDestroyCommandPool>;
using Fence = Owned<VkFence, vkDestroyFence>;
using Semaphore = Owned<VkSemaphore, vkDestroySemaphore>;
using Swapchain = Owned<VkSwapchainKHR, vkDestroySwapchainKHR>;

// A buffer with its own memory, persistently mapped when host-visible.
struct MappedBuffer {
    Buffer buffer;
    Memory memory;
    void* mapped = nullptr;
    VkDeviceSize size = 0;
};

// An image with its own device memory and a view of it.
struct ImageResource {
    Image image;
    Memory memory;
    ImageView view;
};

struct DeviceInfo {
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkPhysicalDeviceMemoryProperties memory{};
};

// Host-visible, host-coherent buffer, mapped for its whole life; device-local memory is preferred
// when it is also host-visible (resizable BAR, integrated GPUs, lavapipe).
Result<MappedBuffer> create_mapped_buffer(const DeviceInfo& device, VkDeviceSize size, VkBufferUsageFlags usage,
                                          const char* what);
Result<ImageResource> create_image(const DeviceInfo& device, VkFormat format, VkExtent2D extent,
                                   VkImageUsageFlags usage, VkImageAspectFlags aspect, const char* what);
Result<ShaderModule> create_shader(VkDevice device, const std::uint32_t* code, std::size_t bytes, const char* name);

}  // namespace ballistic::render::vk
