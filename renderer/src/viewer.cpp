// Ballistic renderer — the interactive window (GLFW + swapchain + imgui HUD).
#include <ballistic/render/viewer.hpp>

#include "scene_pass.hpp"

#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_vulkan.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>

namespace ballistic::render {
namespace {

constexpr std::uint32_t kFramesInFlight = 2;
constexpr std::uint64_t kFenceTimeoutNs = 120'000'000'000ull;
// A press and release closer than this (pixels) is a click, farther apart a drag.
constexpr double kClickSlop = 4.0;

using Clock = std::chrono::steady_clock;

// glfwInit / glfwTerminate, owned by one viewer at a time.
struct GlfwSession {
    bool active = false;
    GlfwSession() = default;
    GlfwSession(const GlfwSession&) = delete;
    GlfwSession& operator=(const GlfwSession&) = delete;
    ~GlfwSession() {
        if (active) glfwTerminate();
    }
};

struct Window {
    GLFWwindow* handle = nullptr;
    Window() = default;
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;
    ~Window() {
        if (handle != nullptr) glfwDestroyWindow(handle);
    }
};

// The imgui context and its two backends; shut down in reverse order of creation.
struct ImguiSession {
    bool context = false;
    bool glfw = false;
    bool vulkan = false;
    ImguiSession() = default;
    ImguiSession(const ImguiSession&) = delete;
    ImguiSession& operator=(const ImguiSession&) = delete;
    ~ImguiSession() {
        if (vulkan) ImGui_ImplVulkan_Shutdown();
        if (glfw) ImGui_ImplGlfw_Shutdown();
        if (context) ImGui::DestroyContext();
    }
};

struct SwapchainImage {
    VkImage image = VK_NULL_HANDLE;   // owned by the swapchain
    vk::ImageView view;
    vk::Framebuffer framebuffer;
    vk::Semaphore rendered;           // per image: presentation may still wait on it
};

struct FrameSlot {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    vk::Semaphore acquired;
    vk::Fence fence;
};

const char* present_mode_name(VkPresentModeKHR mode) {
    switch (mode) {
        case VK_PRESENT_MODE_IMMEDIATE_KHR: return "immediate";
        case VK_PRESENT_MODE_MAILBOX_KHR: return "mailbox";
        case VK_PRESENT_MODE_FIFO_KHR: return "fifo";
        default: return "other";
    }
}

}  // namespace

bool display_available() {
    const char* x11 = std::getenv("DISPLAY");
    const char* wayland = std::getenv("WAYLAND_DISPLAY");
    const bool named = (x11 != nullptr && *x11 != '\0') || (wayland != nullptr && *wayland != '\0');
    if (!named) return false;
    if (glfwInit() != GLFW_TRUE) return false;
    const bool vulkan = glfwVulkanSupported() == GLFW_TRUE;
    glfwTerminate();
    return vulkan;
}

struct Viewer::Impl {
    // Declaration order is destruction order reversed: the window outlives the GPU objects made
    // for its surface, the GPU outlives everything created from it.
    World* world = nullptr;
    ViewerOptions options;
    GlfwSession glfw;
    Window window;
    std::optional<Gpu> gpu;
    std::optional<ScenePass> pass;
    vk::CommandPool commands;
    vk::DescriptorPool imgui_pool;
    vk::Swapchain swapchain;
    VkSurfaceFormatKHR surface_format{};
    VkPresentModeKHR present_mode = VK_PRESENT_MODE_FIFO_KHR;
    VkExtent2D extent{};
    vk::ImageResource depth;
    std::vector<SwapchainImage> images;
    std::array<FrameSlot, kFramesInFlight> slots;
    ImguiSession imgui;

    std::uint32_t slot_index = 0;
    std::uint64_t frames = 0;
    std::uint64_t rebuilds = 0;
    bool rebuild = false;
    Clock::time_point started = Clock::now();

    // Interaction state.
    Framing framing;
    OrbitCamera orbit;
    BallId hooked;
    Vec3 hook_direction{0.0, 0.0, -1.0};
    Explosions explosions;
    bool paused = false;
    bool step_once = false;
    double speed = 1.0;
    bool hud = true;
    FrameStyle style;
    bool dragging_left = false;
    bool dragging_right = false;
    bool moved = false;
    double press_x = 0.0, press_y = 0.0, last_x = 0.0, last_y = 0.0;

    // HUD measurements, over windows of about half a second.
    double fps = 0.0;
    double events_per_second = 0.0;
    Clock::time_point window_start = Clock::now();
    std::uint64_t window_frames = 0;
    std::uint64_t window_collisions = 0;
    std::uint64_t last_collisions = 0;

    ~Impl() {
        if (gpu) vkDeviceWaitIdle(gpu->impl().device);
        // The swapchain images' objects go before the swapchain, which goes before the surface (in
        // Gpu) — the members' order above does this, imgui first of all.
    }

    Gpu::Impl& g() { return gpu->impl(); }
    Camera current_camera() const;
    Status create_swapchain();
    Status init_imgui();
    void build_hud();
    void handle_key(int key, int action);
    void handle_mouse_button(int button, int action);
    void handle_cursor(double x, double y);
    void handle_scroll(double dy);
    std::optional<RayHit> click(double x, double y);
    void advance();
};

Camera Viewer::Impl::current_camera() const {
    if (hooked && world->contains(hooked)) {
        const BallState ball = world->ball(hooked);
        return hook_camera(ball, hook_direction, ball.radius * 0.05, framing.far + framing.orbit.distance);
    }
    return orbit.camera(framing.near * std::max(1.0, orbit.distance / framing.orbit.distance),
                        orbit.distance + framing.scene_radius * 8.0);
}

Status Viewer::Impl::create_swapchain() {
    Gpu::Impl& gi = g();
    const VkDevice device = gi.device;
    vkDeviceWaitIdle(device);
    images.clear();

    VkSurfaceCapabilitiesKHR caps;
    if (VkResult r = vkGetPhysicalDeviceSurfaceCapabilitiesKHR(gi.physical, gi.surface, &caps); r != VK_SUCCESS) {
        return vk::error("query surface", r);
    }
    int fb_width = 0, fb_height = 0;
    glfwGetFramebufferSize(window.handle, &fb_width, &fb_height);
    if (caps.currentExtent.width != 0xffffffffu) {
        extent = caps.currentExtent;
    } else {
        extent = {std::clamp(static_cast<std::uint32_t>(fb_width), caps.minImageExtent.width, caps.maxImageExtent.width),
                  std::clamp(static_cast<std::uint32_t>(fb_height), caps.minImageExtent.height, caps.maxImageExtent.height)};
    }
    if (extent.width == 0 || extent.height == 0) return ok();   // minimised: wait for a size

    std::uint32_t image_count = std::max(caps.minImageCount, kFramesInFlight + 1);
    if (caps.maxImageCount != 0) image_count = std::min(image_count, caps.maxImageCount);
    VkSwapchainCreateInfoKHR info{VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
    info.surface = gi.surface;
    info.minImageCount = image_count;
    info.imageFormat = surface_format.format;
    info.imageColorSpace = surface_format.colorSpace;
    info.imageExtent = extent;
    info.imageArrayLayers = 1;
    info.imageUsage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT;
    info.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE;
    info.preTransform = caps.currentTransform;
    info.compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
    info.presentMode = present_mode;
    info.clipped = VK_TRUE;
    info.oldSwapchain = swapchain.get();
    VkSwapchainKHR raw = VK_NULL_HANDLE;
    if (VkResult r = vkCreateSwapchainKHR(device, &info, nullptr, &raw); r != VK_SUCCESS) {
        return vk::error("create swapchain", r);
    }
    if (swapchain) ++rebuilds;
    swapchain = vk::Swapchain(device, raw);   // destroys the old one, retired by the call above

    std::uint32_t count = 0;
    vkGetSwapchainImagesKHR(device, raw, &count, nullptr);
    std::vector<VkImage> raw_images(count);
    vkGetSwapchainImagesKHR(device, raw, &count, raw_images.data());

    auto depth_image = vk::create_image(gi.info(), ScenePass::kDepthFormat, extent,
                                        VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, VK_IMAGE_ASPECT_DEPTH_BIT, "depth");
    if (!depth_image) return depth_image.error();
    depth = std::move(depth_image.value());

    images.resize(count);
    for (std::uint32_t i = 0; i < count; ++i) {
        SwapchainImage& image = images[i];
        image.image = raw_images[i];
        VkImageViewCreateInfo view_info{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
        view_info.image = image.image;
        view_info.viewType = VK_IMAGE_VIEW_TYPE_2D;
        view_info.format = surface_format.format;
        view_info.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
        VkImageView view = VK_NULL_HANDLE;
        if (VkResult r = vkCreateImageView(device, &view_info, nullptr, &view); r != VK_SUCCESS) {
            return vk::error("create swapchain image view", r);
        }
        image.view = vk::ImageView(device, view);
        const std::array<VkImageView, 2> attachments{view, depth.view.get()};
        VkFramebufferCreateInfo fb{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
        fb.renderPass = pass->render_pass();
        fb.attachmentCount = static_cast<std::uint32_t>(attachments.size());
        fb.pAttachments = attachments.data();
        fb.width = extent.width;
        fb.height = extent.height;
        fb.layers = 1;
        VkFramebuffer framebuffer = VK_NULL_HANDLE;
        if (VkResult r = vkCreateFramebuffer(device, &fb, nullptr, &framebuffer); r != VK_SUCCESS) {
            return vk::error("create swapchain framebuffer", r);
        }
        image.framebuffer = vk::Framebuffer(device, framebuffer);
        VkSemaphoreCreateInfo semaphore_info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
        VkSemaphore semaphore = VK_NULL_HANDLE;
        if (VkResult r = vkCreateSemaphore(device, &semaphore_info, nullptr, &semaphore); r != VK_SUCCESS) {
            return vk::error("create semaphore", r);
        }
        image.rendered = vk::Semaphore(device, semaphore);
    }
    if (imgui.vulkan) ImGui_ImplVulkan_SetMinImageCount(image_count);
    rebuild = false;
    return ok();
}

Status Viewer::Impl::init_imgui() {
    Gpu::Impl& gi = g();
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    imgui.context = true;
    ImGui::GetIO().IniFilename = nullptr;   // no imgui.ini left in the working directory
    ImGui::StyleColorsDark();
    // Installs imgui's callbacks, which chain to the viewer's own installed before.
    if (!ImGui_ImplGlfw_InitForVulkan(window.handle, true)) return vk::error("initialise imgui", "GLFW backend failed");
    imgui.glfw = true;

    const std::array<VkDescriptorPoolSize, 1> sizes{{{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 4}}};
    VkDescriptorPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pool_info.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
    pool_info.maxSets = 4;
    pool_info.poolSizeCount = static_cast<std::uint32_t>(sizes.size());
    pool_info.pPoolSizes = sizes.data();
    VkDescriptorPool pool = VK_NULL_HANDLE;
    if (VkResult r = vkCreateDescriptorPool(gi.device, &pool_info, nullptr, &pool); r != VK_SUCCESS) {
        return vk::error("create imgui descriptor pool", r);
    }
    imgui_pool = vk::DescriptorPool(gi.device, pool);

    ImGui_ImplVulkan_InitInfo init{};
    init.Instance = gi.instance;
    init.PhysicalDevice = gi.physical;
    init.Device = gi.device;
    init.QueueFamily = gi.queue_family;
    init.Queue = gi.queue;
    init.DescriptorPool = pool;
    init.Subpass = 0;
    init.MinImageCount = kFramesInFlight;
    init.ImageCount = static_cast<std::uint32_t>(std::max<std::size_t>(images.size(), kFramesInFlight));
    init.MSAASamples = VK_SAMPLE_COUNT_1_BIT;
    if (!ImGui_ImplVulkan_Init(&init, pass->render_pass())) return vk::error("initialise imgui", "Vulkan backend failed");
    imgui.vulkan = true;

    // Font atlas upload: one command buffer, waited for here.
    VkCommandBuffer cmd = slots[0].cmd;
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (VkResult r = vkBeginCommandBuffer(cmd, &begin); r != VK_SUCCESS) return vk::error("upload imgui fonts", r);
    ImGui_ImplVulkan_CreateFontsTexture(cmd);
    if (VkResult r = vkEndCommandBuffer(cmd); r != VK_SUCCESS) return vk::error("upload imgui fonts", r);
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    if (VkResult r = vkQueueSubmit(gi.queue, 1, &submit, VK_NULL_HANDLE); r != VK_SUCCESS) return vk::error("upload imgui fonts", r);
    if (VkResult r = vkQueueWaitIdle(gi.queue); r != VK_SUCCESS) return vk::error("upload imgui fonts", r);
    ImGui_ImplVulkan_DestroyFontUploadObjects();
    return ok();
}

std::optional<RayHit> Viewer::Impl::click(double x, double y) {
    int width = 0, height = 0;
    glfwGetWindowSize(window.handle, &width, &height);
    if (width <= 0 || height <= 0) return std::nullopt;
    const Ray ray = current_camera().pixel_ray(x, y, width, height);
    std::optional<RayHit> hit = world->ray_cast(ray);
    style.picked = (hit && hit->target == RayHit::Target::Ball) ? hit->ball : BallId{};
    return hit;
}

void Viewer::Impl::handle_key(int key, int action) {
    if (action != GLFW_PRESS && action != GLFW_REPEAT) return;
    if (ImGui::GetIO().WantCaptureKeyboard) return;
    switch (key) {
        case GLFW_KEY_ESCAPE: glfwSetWindowShouldClose(window.handle, GLFW_TRUE); break;
        case GLFW_KEY_SPACE: paused = !paused; break;
        case GLFW_KEY_N: step_once = true; break;
        case GLFW_KEY_EQUAL:
        case GLFW_KEY_KP_ADD: speed = std::min(speed * 2.0, 64.0); break;
        case GLFW_KEY_MINUS:
        case GLFW_KEY_KP_SUBTRACT: speed = std::max(speed / 2.0, 1.0 / 64.0); break;
        case GLFW_KEY_H: hooked = hooked ? BallId{} : (style.picked ? style.picked : BallId{}); break;
        case GLFW_KEY_C: style.color = style.color == ColorMode::Id ? ColorMode::Speed : ColorMode::Id; break;
        case GLFW_KEY_E: style.explosions = !style.explosions; break;
        case GLFW_KEY_L: style.lighting = !style.lighting; break;
        case GLFW_KEY_R: orbit = framing.orbit; hooked = {}; break;
        case GLFW_KEY_F1: hud = !hud; break;
        default: break;
    }
}

void Viewer::Impl::handle_mouse_button(int button, int action) {
    double x = 0.0, y = 0.0;
    glfwGetCursorPos(window.handle, &x, &y);
    if (action == GLFW_PRESS && ImGui::GetIO().WantCaptureMouse) return;
    if (button == GLFW_MOUSE_BUTTON_LEFT) {
        if (action == GLFW_PRESS) {
            dragging_left = true;
            moved = false;
            press_x = last_x = x;
            press_y = last_y = y;
        } else if (action == GLFW_RELEASE && dragging_left) {
            dragging_left = false;
            if (!moved) click(x, y);
        }
    } else if (button == GLFW_MOUSE_BUTTON_RIGHT) {
        dragging_right = action == GLFW_PRESS;
        last_x = x;
        last_y = y;
    }
}

void Viewer::Impl::handle_cursor(double x, double y) {
    const double dx = x - last_x, dy = y - last_y;
    if (dragging_left) {
        if (std::hypot(x - press_x, y - press_y) > kClickSlop) moved = true;
        if (moved) orbit.rotate(-dx * 0.005, dy * 0.005);
    } else if (dragging_right) {
        int height = 1;
        glfwGetWindowSize(window.handle, nullptr, &height);
        orbit.pan(dx / std::max(height, 1), dy / std::max(height, 1));
    }
    last_x = x;
    last_y = y;
}

void Viewer::Impl::handle_scroll(double dy) {
    if (ImGui::GetIO().WantCaptureMouse) return;
    orbit.zoom(std::pow(0.9, dy));
}

void Viewer::Impl::build_hud() {
    ImGui::SetNextWindowPos(ImVec2(10, 10), ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowBgAlpha(0.75f);
    ImGui::Begin("Ballistic", nullptr, ImGuiWindowFlags_AlwaysAutoResize);
    ImGui::Text("%.1f fps   %zu balls", fps, world->ball_count());
    ImGui::Text("t = %.3f   %.4g collisions/s", world->time(), events_per_second);
    ImGui::Text("%s", gpu->device_name().c_str());
    ImGui::Separator();
    Vec3 g_now = world->def().gravity;
    float gravity[3] = {static_cast<float>(g_now.x), static_cast<float>(g_now.y), static_cast<float>(g_now.z)};
    if (ImGui::DragFloat3("gravity", gravity, 0.05f, -100.0f, 100.0f)) {
        world->set_gravity({gravity[0], gravity[1], gravity[2]});
    }
    float restitution = static_cast<float>(world->def().restitution);
    if (ImGui::SliderFloat("restitution", &restitution, 0.0f, 1.0f)) world->set_restitution(restitution);
    float speed_now = static_cast<float>(speed);
    if (ImGui::SliderFloat("speed", &speed_now, 1.0f / 64.0f, 64.0f, "%.3gx", ImGuiSliderFlags_Logarithmic)) {
        speed = speed_now;
    }
    ImGui::Checkbox("paused (Space)", &paused);
    ImGui::SameLine();
    if (ImGui::Button("step (N)")) step_once = true;
    bool by_speed = style.color == ColorMode::Speed;
    if (ImGui::Checkbox("colour by speed (C)", &by_speed)) style.color = by_speed ? ColorMode::Speed : ColorMode::Id;
    ImGui::Checkbox("explosions (E)", &style.explosions);
    ImGui::SameLine();
    ImGui::Checkbox("lighting (L)", &style.lighting);
    ImGui::Separator();
    if (style.picked && world->contains(style.picked)) {
        const BallState b = world->ball(style.picked);
        ImGui::Text("picked ball %u (generation %u)", b.id.index(), b.id.generation());
        ImGui::Text("position %.4g %.4g %.4g", b.position.x, b.position.y, b.position.z);
        ImGui::Text("velocity %.4g %.4g %.4g  |v| %.4g", b.velocity.x, b.velocity.y, b.velocity.z, length(b.velocity));
        ImGui::Text("radius %.4g   mass %.4g", b.radius, b.mass);
        if (ImGui::Button(hooked ? "orbit camera (H)" : "hook camera (H)")) hooked = hooked ? BallId{} : style.picked;
    } else {
        ImGui::TextUnformatted("click a ball to pick it");
    }
    ImGui::Separator();
    ImGui::TextUnformatted("drag: orbit  right-drag: pan  wheel: zoom");
    ImGui::TextUnformatted("+/-: speed  R: reset camera  F1: HUD  Esc: quit");
    ImGui::End();
}

void Viewer::Impl::advance() {
    if (paused && !step_once) return;
    step_once = false;
    if (options.step) options.step(*world, options.frame_time * speed);
    else world->step(options.frame_time * speed);
    explosions.update(*world);
    if (hooked && world->contains(hooked)) {
        const Vec3 v = world->ball(hooked).velocity;
        if (length(v) > 1e-12) hook_direction = v;
    }
}

Viewer::Viewer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Viewer::~Viewer() = default;
Viewer::Viewer(Viewer&&) noexcept = default;
Viewer& Viewer::operator=(Viewer&&) noexcept = default;

Result<Viewer> Viewer::create(World& world, const ViewerOptions& options) {
    auto impl = std::make_unique<Impl>();
    impl->world = &world;
    impl->options = options;
    impl->paused = options.paused;
    impl->speed = options.speed;
    impl->hud = options.hud;
    impl->style = options.style;

    if (glfwInit() != GLFW_TRUE) {
        const char* description = nullptr;
        glfwGetError(&description);
        return vk::error("open window", std::string("GLFW could not initialise: ") +
                                            (description ? description : "no display (is DISPLAY set?)"));
    }
    impl->glfw.active = true;
    if (glfwVulkanSupported() != GLFW_TRUE) return vk::error("open window", "GLFW finds no Vulkan loader or driver");
    glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
    impl->window.handle = glfwCreateWindow(options.width, options.height, options.title.c_str(), nullptr, nullptr);
    if (impl->window.handle == nullptr) {
        const char* description = nullptr;
        glfwGetError(&description);
        return vk::error("open window", description ? description : "glfwCreateWindow failed");
    }
    GLFWwindow* window = impl->window.handle;
    glfwSetWindowUserPointer(window, impl.get());
    glfwSetKeyCallback(window, [](GLFWwindow* w, int key, int, int action, int) {
        static_cast<Impl*>(glfwGetWindowUserPointer(w))->handle_key(key, action);
    });
    glfwSetMouseButtonCallback(window, [](GLFWwindow* w, int button, int action, int) {
        static_cast<Impl*>(glfwGetWindowUserPointer(w))->handle_mouse_button(button, action);
    });
    glfwSetCursorPosCallback(window, [](GLFWwindow* w, double x, double y) {
        static_cast<Impl*>(glfwGetWindowUserPointer(w))->handle_cursor(x, y);
    });
    glfwSetScrollCallback(window, [](GLFWwindow* w, double, double dy) {
        static_cast<Impl*>(glfwGetWindowUserPointer(w))->handle_scroll(dy);
    });
    glfwSetFramebufferSizeCallback(window, [](GLFWwindow* w, int, int) {
        static_cast<Impl*>(glfwGetWindowUserPointer(w))->rebuild = true;
    });

    GpuOptions gpu_options;
    gpu_options.validation = options.validation;
    gpu_options.require_validation = options.require_validation;
    gpu_options.window = window;
    auto gpu = Gpu::create(gpu_options);
    if (!gpu) return gpu.error();
    impl->gpu.emplace(std::move(gpu.value()));
    Gpu::Impl& gi = impl->g();

    // An sRGB surface format, so that shading stays linear (as offscreen).
    std::uint32_t format_count = 0;
    vkGetPhysicalDeviceSurfaceFormatsKHR(gi.physical, gi.surface, &format_count, nullptr);
    std::vector<VkSurfaceFormatKHR> formats(format_count);
    vkGetPhysicalDeviceSurfaceFormatsKHR(gi.physical, gi.surface, &format_count, formats.data());
    if (formats.empty()) return vk::error("choose surface format", "the surface offers no formats");
    impl->surface_format = formats[0];
    for (const VkSurfaceFormatKHR& f : formats) {
        if ((f.format == VK_FORMAT_B8G8R8A8_SRGB || f.format == VK_FORMAT_R8G8B8A8_SRGB) &&
            f.colorSpace == VK_COLOR_SPACE_SRGB_NONLINEAR_KHR) {
            impl->surface_format = f;
            break;
        }
    }
    std::uint32_t mode_count = 0;
    vkGetPhysicalDeviceSurfacePresentModesKHR(gi.physical, gi.surface, &mode_count, nullptr);
    std::vector<VkPresentModeKHR> modes(mode_count);
    vkGetPhysicalDeviceSurfacePresentModesKHR(gi.physical, gi.surface, &mode_count, modes.data());
    impl->present_mode = VK_PRESENT_MODE_FIFO_KHR;   // always supported
    if (!options.vsync) {
        for (VkPresentModeKHR wanted : {VK_PRESENT_MODE_MAILBOX_KHR, VK_PRESENT_MODE_IMMEDIATE_KHR}) {
            if (std::find(modes.begin(), modes.end(), wanted) != modes.end()) {
                impl->present_mode = wanted;
                break;
            }
        }
    }

    auto pass = ScenePass::create(gi, impl->surface_format.format, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR, kFramesInFlight);
    if (!pass) return pass.error();
    impl->pass.emplace(std::move(pass.value()));

    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = gi.queue_family;
    VkCommandPool pool = VK_NULL_HANDLE;
    if (VkResult r = vkCreateCommandPool(gi.device, &pool_info, nullptr, &pool); r != VK_SUCCESS) {
        return vk::error("create command pool", r);
    }
    impl->commands = vk::CommandPool(gi.device, pool);
    for (FrameSlot& slot : impl->slots) {
        VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        allocate.commandPool = pool;
        allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        allocate.commandBufferCount = 1;
        if (VkResult r = vkAllocateCommandBuffers(gi.device, &allocate, &slot.cmd); r != VK_SUCCESS) {
            return vk::error("allocate command buffer", r);
        }
        VkSemaphoreCreateInfo semaphore_info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
        VkSemaphore semaphore = VK_NULL_HANDLE;
        if (VkResult r = vkCreateSemaphore(gi.device, &semaphore_info, nullptr, &semaphore); r != VK_SUCCESS) {
            return vk::error("create semaphore", r);
        }
        slot.acquired = vk::Semaphore(gi.device, semaphore);
        VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        fence_info.flags = VK_FENCE_CREATE_SIGNALED_BIT;
        VkFence fence = VK_NULL_HANDLE;
        if (VkResult r = vkCreateFence(gi.device, &fence_info, nullptr, &fence); r != VK_SUCCESS) {
            return vk::error("create fence", r);
        }
        slot.fence = vk::Fence(gi.device, fence);
    }
    if (Status s = impl->create_swapchain(); !s) return s.error();
    if (Status s = impl->init_imgui(); !s) return s.error();

    impl->framing = frame_world(world);
    if (options.camera) impl->framing.orbit = *options.camera;
    impl->orbit = impl->framing.orbit;
    impl->started = Clock::now();
    impl->window_start = impl->started;
    impl->last_collisions = world.event_counts().collisions();
    return Viewer(std::move(impl));
}

Status Viewer::frame() {
    Impl& s = *impl_;
    Gpu::Impl& gi = s.g();
    glfwPollEvents();
    if (s.rebuild || !s.swapchain) {
        if (Status st = s.create_swapchain(); !st) return st;
        if (!s.swapchain || s.extent.width == 0) {
            glfwWaitEventsTimeout(0.05);   // minimised: nothing to draw into
            return ok();
        }
    }

    FrameSlot& slot = s.slots[s.slot_index];
    const VkFence fence = slot.fence.get();
    if (VkResult r = vkWaitForFences(gi.device, 1, &fence, VK_TRUE, kFenceTimeoutNs); r != VK_SUCCESS) {
        return vk::error("wait for frame", r);
    }
    std::uint32_t image_index = 0;
    VkResult acquired = vkAcquireNextImageKHR(gi.device, s.swapchain.get(), kFenceTimeoutNs, slot.acquired.get(),
                                              VK_NULL_HANDLE, &image_index);
    if (acquired == VK_ERROR_OUT_OF_DATE_KHR) {
        s.rebuild = true;
        return ok();
    }
    if (acquired != VK_SUCCESS && acquired != VK_SUBOPTIMAL_KHR) return vk::error("acquire swapchain image", acquired);
    if (VkResult r = vkResetFences(gi.device, 1, &fence); r != VK_SUCCESS) return vk::error("reset fence", r);

    ImGui_ImplVulkan_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    if (s.hud) s.build_hud();
    ImGui::Render();

    if (Status st = s.pass->prepare(s.slot_index, *s.world, s.current_camera(), s.style, &s.explosions, s.extent); !st) {
        return st;
    }
    if (VkResult r = vkResetCommandBuffer(slot.cmd, 0); r != VK_SUCCESS) return vk::error("reset command buffer", r);
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (VkResult r = vkBeginCommandBuffer(slot.cmd, &begin); r != VK_SUCCESS) return vk::error("begin command buffer", r);
    s.pass->record(slot.cmd, s.slot_index, s.images[image_index].framebuffer.get(), s.extent,
                   [](VkCommandBuffer cmd) { ImGui_ImplVulkan_RenderDrawData(ImGui::GetDrawData(), cmd); });
    if (VkResult r = vkEndCommandBuffer(slot.cmd); r != VK_SUCCESS) return vk::error("end command buffer", r);

    const VkSemaphore wait = slot.acquired.get();
    const VkSemaphore signal = s.images[image_index].rendered.get();
    const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.waitSemaphoreCount = 1;
    submit.pWaitSemaphores = &wait;
    submit.pWaitDstStageMask = &wait_stage;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &slot.cmd;
    submit.signalSemaphoreCount = 1;
    submit.pSignalSemaphores = &signal;
    if (VkResult r = vkQueueSubmit(gi.queue, 1, &submit, fence); r != VK_SUCCESS) return vk::error("submit frame", r);

    const VkSwapchainKHR swapchain = s.swapchain.get();
    VkPresentInfoKHR present{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
    present.waitSemaphoreCount = 1;
    present.pWaitSemaphores = &signal;
    present.swapchainCount = 1;
    present.pSwapchains = &swapchain;
    present.pImageIndices = &image_index;
    const VkResult presented = vkQueuePresentKHR(gi.queue, &present);
    if (presented == VK_ERROR_OUT_OF_DATE_KHR || presented == VK_SUBOPTIMAL_KHR || acquired == VK_SUBOPTIMAL_KHR) {
        s.rebuild = true;
    } else if (presented != VK_SUCCESS) {
        return vk::error("present", presented);
    }
    s.slot_index = (s.slot_index + 1) % kFramesInFlight;
    ++s.frames;

    // The next frame's simulation runs while the device draws this one.
    s.advance();

    ++s.window_frames;
    const double elapsed = std::chrono::duration<double>(Clock::now() - s.window_start).count();
    if (elapsed >= 0.5) {
        const std::uint64_t collisions = s.world->event_counts().collisions();
        s.fps = static_cast<double>(s.window_frames) / elapsed;
        s.events_per_second = static_cast<double>(collisions - s.last_collisions) / elapsed;
        s.last_collisions = collisions;
        s.window_frames = 0;
        s.window_start = Clock::now();
    }
    if (s.options.max_frames != 0 && s.frames >= s.options.max_frames) glfwSetWindowShouldClose(s.window.handle, GLFW_TRUE);
    return ok();
}

bool Viewer::should_close() const { return glfwWindowShouldClose(impl_->window.handle) == GLFW_TRUE; }

ViewerReport Viewer::report() const {
    ViewerReport report;
    report.frames = impl_->frames;
    report.seconds = std::chrono::duration<double>(Clock::now() - impl_->started).count();
    report.swapchain_rebuilds = impl_->rebuilds;
    report.device = impl_->gpu->device_name();
    report.present_mode = present_mode_name(impl_->present_mode);
    report.validation_messages = impl_->gpu->validation_messages();
    return report;
}

Result<ViewerReport> Viewer::run() {
    while (!should_close()) {
        if (Status s = frame(); !s) return s.error();
    }
    vkDeviceWaitIdle(impl_->g().device);
    return report();
}

std::optional<RayHit> Viewer::click(double x, double y) { return impl_->click(x, y); }
BallId Viewer::picked() const { return impl_->style.picked; }
void Viewer::hook(BallId ball) { impl_->hooked = ball; }
Camera Viewer::camera() const { return impl_->current_camera(); }
void Viewer::resize(int width, int height) { glfwSetWindowSize(impl_->window.handle, width, height); }
std::pair<int, int> Viewer::framebuffer_size() const {
    int width = 0, height = 0;
    glfwGetFramebufferSize(impl_->window.handle, &width, &height);
    return {width, height};
}
const Gpu& Viewer::gpu() const { return *impl_->gpu; }

}  // namespace ballistic::render
