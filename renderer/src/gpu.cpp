// Ballistic renderer — instance, validation, device selection and the graphics queue.
#include "gpu_impl.hpp"

#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

namespace ballistic::render {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    const char* level = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) != 0 ? "error" : "warning";
    static_cast<MessageLog*>(user)->add(std::string(level) + ": " + (data->pMessage ? data->pMessage : ""));
    return VK_FALSE;   // never abort the call that triggered it
}

VkDebugUtilsMessengerCreateInfoEXT messenger_info(MessageLog* log) {
    VkDebugUtilsMessengerCreateInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    info.pfnUserCallback = on_debug_message;
    info.pUserData = log;
    return info;
}

bool has_layer(const char* name) {
    std::uint32_t count = 0;
    vkEnumerateInstanceLayerProperties(&count, nullptr);
    std::vector<VkLayerProperties> layers(count);
    vkEnumerateInstanceLayerProperties(&count, layers.data());
    return std::any_of(layers.begin(), layers.end(), [&](const VkLayerProperties& l) { return std::strcmp(l.layerName, name) == 0; });
}

bool has_instance_extension(const char* name) {
    std::uint32_t count = 0;
    vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr);
    std::vector<VkExtensionProperties> extensions(count);
    vkEnumerateInstanceExtensionProperties(nullptr, &count, extensions.data());
    return std::any_of(extensions.begin(), extensions.end(),
                       [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

const char* type_name(VkPhysicalDeviceType type) {
    switch (type) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
        default: return "other";
    }
}

// Discrete GPUs first, Mesa's lavapipe (a CPU device) last.
int type_rank(VkPhysicalDeviceType type) {
    switch (type) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
        default: return 0;
    }
}

struct Candidate {
    VkPhysicalDevice device = VK_NULL_HANDLE;
    VkPhysicalDeviceProperties properties{};
    std::uint32_t queue_family = 0;
};

// Empty when the device can do everything the renderer needs, the reason otherwise.
std::string check_device(VkPhysicalDevice device, VkSurfaceKHR surface, Candidate& out) {
    VkPhysicalDeviceProperties properties;
    vkGetPhysicalDeviceProperties(device, &properties);
    out.device = device;
    out.properties = properties;
    if (properties.apiVersion < VK_API_VERSION_1_2) return "Vulkan 1.2 not supported";

    std::uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
    bool found = false;
    for (std::uint32_t i = 0; i < count && !found; ++i) {
        if ((families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) == 0) continue;
        if (surface != VK_NULL_HANDLE) {
            VkBool32 present = VK_FALSE;
            vkGetPhysicalDeviceSurfaceSupportKHR(device, i, surface, &present);
            if (present == VK_FALSE) continue;
        }
        out.queue_family = i;
        found = true;
    }
    if (!found) return surface != VK_NULL_HANDLE ? "no queue that draws and presents to the window" : "no graphics queue";

    if (surface != VK_NULL_HANDLE) {
        std::uint32_t extension_count = 0;
        vkEnumerateDeviceExtensionProperties(device, nullptr, &extension_count, nullptr);
        std::vector<VkExtensionProperties> extensions(extension_count);
        vkEnumerateDeviceExtensionProperties(device, nullptr, &extension_count, extensions.data());
        const bool swapchain = std::any_of(extensions.begin(), extensions.end(), [](const VkExtensionProperties& e) {
            return std::strcmp(e.extensionName, VK_KHR_SWAPCHAIN_EXTENSION_NAME) == 0;
        });
        if (!swapchain) return "no VK_KHR_swapchain";
    }

    VkFormatProperties depth;
    vkGetPhysicalDeviceFormatProperties(device, VK_FORMAT_D32_SFLOAT, &depth);
    if ((depth.optimalTilingFeatures & VK_FORMAT_FEATURE_DEPTH_STENCIL_ATTACHMENT_BIT) == 0) return "no D32_SFLOAT depth attachments";
    VkFormatProperties color;
    vkGetPhysicalDeviceFormatProperties(device, VK_FORMAT_R8G8B8A8_SRGB, &color);
    const VkFormatFeatureFlags needed = VK_FORMAT_FEATURE_COLOR_ATTACHMENT_BIT | VK_FORMAT_FEATURE_COLOR_ATTACHMENT_BLEND_BIT;
    if ((color.optimalTilingFeatures & needed) != needed) return "no blendable R8G8B8A8_SRGB colour attachments";
    return {};
}

}  // namespace

Gpu::Impl::~Impl() {
    if (device != VK_NULL_HANDLE) {
        vkDeviceWaitIdle(device);
        vkDestroyDevice(device, nullptr);
    }
    if (surface != VK_NULL_HANDLE) vkDestroySurfaceKHR(instance, surface, nullptr);
    if (messenger != VK_NULL_HANDLE) {
        auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
        if (destroy != nullptr) destroy(instance, messenger, nullptr);
    }
    if (instance != VK_NULL_HANDLE) vkDestroyInstance(instance, nullptr);
}

Gpu::Gpu(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gpu::~Gpu() = default;
Gpu::Gpu(Gpu&&) noexcept = default;
Gpu& Gpu::operator=(Gpu&&) noexcept = default;

Result<Gpu> Gpu::create(const GpuOptions& options) {
    auto impl = std::make_unique<Impl>();

    // Instance ------------------------------------------------------------------------------
    std::uint32_t loader_version = VK_API_VERSION_1_0;
    if (vkEnumerateInstanceVersion(&loader_version) != VK_SUCCESS || loader_version < VK_API_VERSION_1_2) {
        return vk::error("create instance", "the Vulkan loader is older than 1.2");
    }
    std::vector<const char*> extensions;
    std::vector<const char*> layers;
    if (options.window != nullptr) {
        std::uint32_t count = 0;
        const char** glfw_extensions = glfwGetRequiredInstanceExtensions(&count);
        if (glfw_extensions == nullptr) {
            return vk::error("create instance", "GLFW found no Vulkan surface support for this display");
        }
        extensions.assign(glfw_extensions, glfw_extensions + count);
    }
    if (options.validation) {
        if (has_layer(kValidationLayer) && has_instance_extension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) {
            layers.push_back(kValidationLayer);
            extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
            impl->validation = true;
        } else if (options.require_validation) {
            return vk::error("create instance",
                             "validation requested but VK_LAYER_KHRONOS_validation is not installed "
                             "(Debian: vulkan-validationlayers)");
        }
    }
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "ballistic";
    app.pEngineName = "ballistic";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo instance_info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    instance_info.pApplicationInfo = &app;
    instance_info.enabledLayerCount = static_cast<std::uint32_t>(layers.size());
    instance_info.ppEnabledLayerNames = layers.data();
    instance_info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
    instance_info.ppEnabledExtensionNames = extensions.data();
    // Also catches messages from instance creation and destruction themselves.
    VkDebugUtilsMessengerCreateInfoEXT debug = messenger_info(&impl->log);
    if (impl->validation) instance_info.pNext = &debug;
    if (VkResult r = vkCreateInstance(&instance_info, nullptr, &impl->instance); r != VK_SUCCESS) {
        return vk::error("create instance", r);
    }
    if (impl->validation) {
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(impl->instance, "vkCreateDebugUtilsMessengerEXT"));
        if (create == nullptr) return vk::error("create debug messenger", "vkCreateDebugUtilsMessengerEXT not found");
        if (VkResult r = create(impl->instance, &debug, nullptr, &impl->messenger); r != VK_SUCCESS) {
            return vk::error("create debug messenger", r);
        }
    }
    if (options.window != nullptr) {
        if (VkResult r = glfwCreateWindowSurface(impl->instance, static_cast<GLFWwindow*>(options.window), nullptr,
                                                 &impl->surface);
            r != VK_SUCCESS) {
            return vk::error("create window surface", r);
        }
    }

    // Device --------------------------------------------------------------------------------
    std::uint32_t device_count = 0;
    vkEnumeratePhysicalDevices(impl->instance, &device_count, nullptr);
    std::vector<VkPhysicalDevice> devices(device_count);
    vkEnumeratePhysicalDevices(impl->instance, &device_count, devices.data());
    if (devices.empty()) {
        return vk::error("pick device", "no Vulkan device found (install a GPU driver, or Mesa's lavapipe: "
                                        "Debian package mesa-vulkan-drivers)");
    }
    std::optional<Candidate> best;
    std::string rejected;
    for (VkPhysicalDevice device : devices) {
        Candidate candidate;
        const std::string reason = check_device(device, impl->surface, candidate);
        if (!reason.empty()) {
            rejected += std::string(rejected.empty() ? "" : "; ") + candidate.properties.deviceName + ": " + reason;
            continue;
        }
        if (!best || type_rank(candidate.properties.deviceType) > type_rank(best->properties.deviceType)) best = candidate;
    }
    if (!best) return vk::error("pick device", "no usable Vulkan device (" + rejected + ")");
    impl->physical = best->device;
    impl->properties = best->properties;
    impl->queue_family = best->queue_family;
    vkGetPhysicalDeviceMemoryProperties(impl->physical, &impl->memory);

    VkPhysicalDeviceFeatures supported;
    vkGetPhysicalDeviceFeatures(impl->physical, &supported);
    VkPhysicalDeviceFeatures enabled{};
    // Point sprites larger than one pixel; without them balls are drawn as triangles.
    enabled.largePoints = supported.largePoints;
    impl->large_points = supported.largePoints == VK_TRUE;

    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue.queueFamilyIndex = impl->queue_family;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    const std::array<const char*, 1> swapchain{VK_KHR_SWAPCHAIN_EXTENSION_NAME};
    VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue;
    device_info.pEnabledFeatures = &enabled;
    if (impl->surface != VK_NULL_HANDLE) {
        device_info.enabledExtensionCount = 1;
        device_info.ppEnabledExtensionNames = swapchain.data();
    }
    if (VkResult r = vkCreateDevice(impl->physical, &device_info, nullptr, &impl->device); r != VK_SUCCESS) {
        return vk::error(std::string("create device on ") + impl->properties.deviceName, r);
    }
    vkGetDeviceQueue(impl->device, impl->queue_family, 0, &impl->queue);
    return Gpu(std::move(impl));
}

std::string Gpu::device_name() const { return impl_->properties.deviceName; }
std::string Gpu::device_type() const { return type_name(impl_->properties.deviceType); }
bool Gpu::validation_enabled() const { return impl_->validation; }

std::vector<std::string> Gpu::validation_messages() const {
    const std::lock_guard lock(impl_->log.mutex);
    return impl_->log.messages;
}

std::size_t Gpu::validation_message_count() const {
    const std::lock_guard lock(impl_->log.mutex);
    return impl_->log.messages.size();
}

}  // namespace ballistic::render
