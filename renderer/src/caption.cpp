// Ballistic renderer — a caption drawn into a finished image on the CPU: stb_easy_font's quads,
// scaled and filled as pixel rectangles, white over a one-pixel dark shadow, on a darkened backing
// so that it reads over balls and walls alike.
#include <ballistic/render/renderer.hpp>

#include <stb_easy_font.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace ballistic::render {

void draw_caption(Image& image, std::string_view text, int scale) {
    if (text.empty() || image.width <= 0 || image.height <= 0) return;
    scale = std::max(scale, 1);
    struct Vertex {
        float x, y, z;
        unsigned char color[4];
    };
    const int margin = 6 * scale;
    // Wrapped at spaces to the image's width (stb_easy_font breaks lines at '\n'): the spaces
    // before a word that starts a new line are left out; a word wider than the image stays whole
    // and is cut at its edge.
    std::string copy;  // stb_easy_font takes a mutable C string
    auto width = [](std::string line) { return stb_easy_font_width(line.data()); };
    const int room = (image.width - 2 * margin) / scale;
    std::size_t line = 0;  // where the last line starts in `copy`
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t word = std::min(text.find_first_not_of(' ', at), text.size());
        const std::size_t end = std::min(text.find(' ', word), text.size());
        const std::string spaced(text.substr(at, end - at));
        if (copy.size() > line && width(copy.substr(line) + spaced) > room) {
            copy += '\n';
            line = copy.size();
            copy += text.substr(word, end - word);
        } else {
            copy += spaced;
        }
        at = end;
    }
    std::vector<Vertex> quads(copy.size() * 70);  // ~270 bytes per character, with room
    const int count = stb_easy_font_print(0.0f, 0.0f, copy.data(), nullptr, quads.data(),
                                          static_cast<int>(quads.size() * sizeof(Vertex)));
    auto fill = [&](float x0, float y0, float x1, float y1, int offset, std::uint8_t value) {
        const int ax = margin + offset + static_cast<int>(std::lround(x0 * static_cast<float>(scale)));
        const int ay = margin + offset + static_cast<int>(std::lround(y0 * static_cast<float>(scale)));
        const int bx = margin + offset + static_cast<int>(std::lround(x1 * static_cast<float>(scale)));
        const int by = margin + offset + static_cast<int>(std::lround(y1 * static_cast<float>(scale)));
        for (int y = std::max(ay, 0); y < std::min(by, image.height); ++y) {
            for (int x = std::max(ax, 0); x < std::min(bx, image.width); ++x) {
                std::uint8_t* p = &image.rgba[(static_cast<std::size_t>(y) * static_cast<std::size_t>(image.width) +
                                               static_cast<std::size_t>(x)) * 4];
                p[0] = p[1] = p[2] = value;
                p[3] = 255;
            }
        }
    };
    // The backing: the text's box and a margin of two pixels of the font, at a third of its brightness.
    float x_hi = 0.0f, y_hi = 0.0f;
    for (int q = 0; q < count * 4; ++q) {
        x_hi = std::max(x_hi, quads[static_cast<std::size_t>(q)].x);
        y_hi = std::max(y_hi, quads[static_cast<std::size_t>(q)].y);
    }
    const int pad = 2 * scale;
    const int bx = margin + static_cast<int>(std::lround(x_hi * static_cast<float>(scale))) + pad;
    const int by = margin + static_cast<int>(std::lround(y_hi * static_cast<float>(scale))) + pad;
    for (int y = std::max(margin - pad, 0); y < std::min(by, image.height); ++y) {
        for (int x = std::max(margin - pad, 0); x < std::min(bx, image.width); ++x) {
            std::uint8_t* p = &image.rgba[(static_cast<std::size_t>(y) * static_cast<std::size_t>(image.width) +
                                           static_cast<std::size_t>(x)) * 4];
            for (int c = 0; c < 3; ++c) p[c] = static_cast<std::uint8_t>(p[c] / 3);
        }
    }
    for (const int offset : {1, 0}) {  // the shadow first, then the text over it
        for (int q = 0; q < count; ++q) {
            const Vertex* v = &quads[static_cast<std::size_t>(q) * 4];
            fill(std::min(v[0].x, v[2].x), std::min(v[0].y, v[2].y), std::max(v[0].x, v[2].x),
                 std::max(v[0].y, v[2].y), offset, offset == 1 ? 0 : 255);
        }
    }
}

}  // namespace ballistic::render
