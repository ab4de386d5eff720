// Ballistic renderer — what a Gpu holds, shared by the renderer's translation units.
#pragma once

#include "vk.hpp"

#include <ballistic/render/renderer.hpp>

#include <mutex>
#include <string>
#include <vector>

namespace ballistic::render {

// Validation messages arrive on any thread the driver or layer calls from.
struct MessageLog {
    mutable std::mutex mutex;
    std::vector<std::string> messages;

    void add(std::string message) {
        const std::lock_guard lock(mutex);
        messages.push_back(std::move(message));
    }
};

struct Gpu::Impl {
    // Destroyed in reverse order of declaration by the destructor below, device last but one.
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkSurfaceKHR surface = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkPhysicalDeviceProperties properties{};
    VkPhysicalDeviceMemoryProperties memory{};
    std::uint32_t queue_family = 0;
    VkQueue queue = VK_NULL_HANDLE;
    bool validation = false;
    bool large_points = false;
    MessageLog log;

    Impl() = default;
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    ~Impl();

    vk::DeviceInfo info() const { return {physical, device, memory}; }
};

}  // namespace ballistic::render
