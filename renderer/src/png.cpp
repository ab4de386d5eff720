// Ballistic renderer — PNG output through stb_image_write (Debian's libstb).
#include <ballistic/render/renderer.hpp>

#include <stb_image_write.h>

namespace ballistic::render {

Status write_png(const Image& image, const std::filesystem::path& path) {
    if (image.width <= 0 || image.height <= 0 || image.rgba.size() != static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.height) * 4) {
        return Error{"write PNG " + path.string(), "the image is empty or its size does not match its pixels", 0};
    }
    if (stbi_write_png(path.string().c_str(), image.width, image.height, 4, image.rgba.data(), image.width * 4) == 0) {
        return Error{"write PNG " + path.string(), "stb_image_write could not write the file (missing directory or no permission?)", 0};
    }
    return ok();
}

}  // namespace ballistic::render
