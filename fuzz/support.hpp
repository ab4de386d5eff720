// What the World fuzz targets share: the reader of their input (bytes as the numbers and choices
// of the calls they make, 0 once the input is used up) and the snapshot round trip.
#pragma once

#include <ballistic/world.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>

namespace ballistic::fuzz {

class Bytes {
public:
    Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    bool empty() const { return at_ >= size_; }
    std::uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
    // Mostly small ordinary numbers, sometimes any double (NaN, infinities, huge, tiny).
    double number() {
        const std::uint8_t kind = byte();
        if (kind < 200) return (static_cast<double>(byte()) - 100.0) / 8.0;
        double value = 0.0;
        std::uint8_t raw[8];
        for (auto& b : raw) b = byte();
        std::memcpy(&value, raw, sizeof value);
        return value;
    }
    Vec3 vec() { return {number(), number(), number()}; }
    // One of `values`: settings at their edges and in between.
    template <std::size_t N>
    double pick(const std::array<double, N>& values) { return values[byte() % N]; }
    double unit() { return byte() / 255.0; }  // 0 to 1, both ends included

private:
    const std::uint8_t* data_;
    std::size_t size_, at_ = 0;
};

// Saves the world and restores it with the settings it was made with: the restored world takes
// over.
inline void round_trip(World& world, const WorldDef& def) {
    std::stringstream snapshot;
    world.save(snapshot);
    RestoreOptions options;
    options.threads = def.threads;
    options.memory_limit = def.memory_limit;
    world = World::restore(snapshot, options);
}

}  // namespace ballistic::fuzz
