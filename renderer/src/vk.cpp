#include "vk.hpp"

namespace ballistic::render::vk {

const char* result_name(VkResult result) {
    switch (result) {
        case VK_SUCCESS: return "VK_SUCCESS";
        case VK_NOT_READY: return "VK_NOT_READY";
        case VK_TIMEOUT: return "VK_TIMEOUT";
        case VK_INCOMPLETE: return "VK_INCOMPLETE";
        case VK_SUBOPTIMAL_KHR: return "VK_SUBOPTIMAL_KHR";
        case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
        case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
        case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
        case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
        case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
        case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
        case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
        case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
        case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER (no Vulkan driver found)";
        case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
        case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
        case VK_ERROR_SURFACE_LOST_KHR: return "VK_ERROR_SURFACE_LOST_KHR";
        case VK_ERROR_NATIVE_WINDOW_IN_USE_KHR: return "VK_ERROR_NATIVE_WINDOW_IN_USE_KHR";
        case VK_ERROR_OUT_OF_DATE_KHR: return "VK_ERROR_OUT_OF_DATE_KHR";
        default: return "an unknown VkResult";
    }
}

namespace {

// First memory type allowed by `bits` that has all of `wanted`, or -1.
int find_memory_type(const VkPhysicalDeviceMemoryProperties& memory, std::uint32_t bits, VkMemoryPropertyFlags wanted) {
    for (std::uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
        if ((bits & (1u << i)) != 0 && (memory.memoryTypes[i].propertyFlags & wanted) == wanted) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

}  // namespace

Result<MappedBuffer> create_mapped_buffer(const DeviceInfo& device, VkDeviceSize size, VkBufferUsageFlags usage,
                                          const char* what) {
    const std::string stage = std::string("create ") + what + " buffer";
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = size;
    info.usage = usage;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkBuffer raw = VK_NULL_HANDLE;
    if (VkResult r = vkCreateBuffer(device.device, &info, nullptr, &raw); r != VK_SUCCESS) return error(stage, r);
    MappedBuffer out;
    out.buffer = Buffer(device.device, raw);
    out.size = size;

    VkMemoryRequirements requirements;
    vkGetBufferMemoryRequirements(device.device, raw, &requirements);
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int type = find_memory_type(device.memory, requirements.memoryTypeBits, host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (type < 0) type = find_memory_type(device.memory, requirements.memoryTypeBits, host);
    if (type < 0) return error(stage, "no host-visible, host-coherent memory type");

    VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    allocate.allocationSize = requirements.size;
    allocate.memoryTypeIndex = static_cast<std::uint32_t>(type);
    VkDeviceMemory memory = VK_NULL_HANDLE;
    if (VkResult r = vkAllocateMemory(device.device, &allocate, nullptr, &memory); r != VK_SUCCESS) {
        return error(stage + " (" + std::to_string(requirements.size) + " bytes)", r);
    }
    out.memory = Memory(device.device, memory);
    if (VkResult r = vkBindBufferMemory(device.device, raw, memory, 0); r != VK_SUCCESS) return error(stage, r);
    if (VkResult r = vkMapMemory(device.device, memory, 0, VK_WHOLE_SIZE, 0, &out.mapped); r != VK_SUCCESS) {
        return error(stage, r);
    }
    return out;
}

Result<ImageResource> create_image(const DeviceInfo& device, VkFormat format, VkExtent2D extent,
                                   VkImageUsageFlags usage, VkImageAspectFlags aspect, const char* what) {
    const std::string stage = std::string("create ") + what + " image";
    VkImageCreateInfo info{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
    info.imageType = VK_IMAGE_TYPE_2D;
    info.format = format;
    info.extent = {extent.width, extent.height, 1};
    info.mipLevels = 1;
    info.arrayLayers = 1;
    info.samples = VK_SAMPLE_COUNT_1_BIT;
    info.tiling = VK_IMAGE_TILING_OPTIMAL;
    info.usage = usage;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    info.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    VkImage raw = VK_NULL_HANDLE;
    if (VkResult r = vkCreateImage(device.device, &info, nullptr, &raw); r != VK_SUCCESS) return error(stage, r);
    ImageResource out;
    out.image = Image(device.device, raw);

    VkMemoryRequirements requirements;
    vkGetImageMemoryRequirements(device.device, raw, &requirements);
    const int type = find_memory_type(device.memory, requirements.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (type < 0) return error(stage, "no device-local memory type for the image");
    VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    allocate.allocationSize = requirements.size;
    allocate.memoryTypeIndex = static_cast<std::uint32_t>(type);
    VkDeviceMemory memory = VK_NULL_HANDLE;
    if (VkResult r = vkAllocateMemory(device.device, &allocate, nullptr, &memory); r != VK_SUCCESS) return error(stage, r);
    out.memory = Memory(device.device, memory);
    if (VkResult r = vkBindImageMemory(device.device, raw, memory, 0); r != VK_SUCCESS) return error(stage, r);

    VkImageViewCreateInfo view{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    view.image = raw;
    view.viewType = VK_IMAGE_VIEW_TYPE_2D;
    view.format = format;
    view.subresourceRange = {aspect, 0, 1, 0, 1};
    VkImageView raw_view = VK_NULL_HANDLE;
    if (VkResult r = vkCreateImageView(device.device, &view, nullptr, &raw_view); r != VK_SUCCESS) return error(stage, r);
    out.view = ImageView(device.device, raw_view);
    return out;
}

Result<ShaderModule> create_shader(VkDevice device, const std::uint32_t* code, std::size_t bytes, const char* name) {
    VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = bytes;
    info.pCode = code;
    VkShaderModule module = VK_NULL_HANDLE;
    if (VkResult r = vkCreateShaderModule(device, &info, nullptr, &module); r != VK_SUCCESS) {
        return error(std::string("create shader module ") + name, r);
    }
    return ShaderModule(device, module);
}

}  // namespace ballistic::render::vk
