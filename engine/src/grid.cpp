#include "grid.hpp"

#include <algorithm>
#include <cmath>

namespace ballistic::detail {
namespace {
constexpr std::int64_t kKeyLimit = std::int64_t{1} << 52;  // beyond this, cells stop splitting

double axis(Vec3 v, int d) { return d == 0 ? v.x : (d == 1 ? v.y : v.z); }
void set_axis(Vec3& v, int d, double value) { (d == 0 ? v.x : (d == 1 ? v.y : v.z)) = value; }
}  // namespace

void Grid::configure(double min_width, const std::optional<Box>& periodic, std::size_t capacity) {
    periodic_ = periodic.has_value();
    min_width_ = min_width;
    if (periodic_) {
        origin_ = periodic->min;
        upper_ = periodic->max;
        period_ = periodic->max - periodic->min;
        for (int d = 0; d < 3; ++d) {
            const double length = axis(period_, d);
            cells_[static_cast<std::size_t>(d)] =
                std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(length / min_width)));
            set_axis(width_, d, length / static_cast<double>(cells_[static_cast<std::size_t>(d)]));
        }
    } else {
        origin_ = {};
        width_ = {min_width, min_width, min_width};
    }
    size_ = 0;
    next_.assign(capacity, -1);
    prev_.assign(capacity, -1);
    key_.assign(capacity, CellKey{});
    // A periodic box small enough gets one bucket per cell, laid out x-fastest: no collisions,
    // and the three x-neighbours of a cell share a cache line.
    dense_ = false;
    if (periodic_) {
        const double cells = double(cells_[0]) * double(cells_[1]) * double(cells_[2]);
        if (cells <= 8.0 * double(std::max<std::size_t>(capacity, 1024))) {
            dense_ = true;
            head_.assign(static_cast<std::size_t>(cells), -1);
            return;
        }
    }
    std::size_t buckets = 1024;
    while (buckets < 2 * capacity) buckets *= 2;
    head_.assign(buckets, -1);
    mask_ = buckets - 1;
}

CellKey Grid::key_of(Vec3 position) const {
    CellKey key;
    for (int d = 0; d < 3; ++d) {
        const double c = std::floor((axis(position, d) - axis(origin_, d)) / axis(width_, d));
        std::int64_t k = static_cast<std::int64_t>(std::clamp(c, -double(kKeyLimit), double(kKeyLimit)));
        if (periodic_) k = std::clamp<std::int64_t>(k, 0, cells_[static_cast<std::size_t>(d)] - 1);
        key[d] = k;
    }
    return key;
}

double Grid::bound(int d, std::int64_t k) const {
    if (periodic_ && k >= cells_[static_cast<std::size_t>(d)]) return axis(upper_, d);
    return axis(origin_, d) + static_cast<double>(k) * axis(width_, d);
}

CellKey Grid::across(const CellKey& key, int face, Vec3& shift) const {
    const int d = face / 2;
    CellKey out = key;
    out[d] += (face & 1) ? 1 : -1;
    shift = {};
    if (periodic_) {
        const std::int64_t n = cells_[static_cast<std::size_t>(d)];
        // Leaving through the low face re-enters at the high one: the position moves up a period.
        if (out[d] < 0) {
            out[d] += n;
            set_axis(shift, d, axis(period_, d));
        } else if (out[d] >= n) {
            out[d] -= n;
            set_axis(shift, d, -axis(period_, d));
        }
    }
    return out;
}

bool Grid::has_face(const CellKey& key, int face) const {
    if (periodic_) return true;
    const std::int64_t k = key[face / 2];
    return (face & 1) ? k < kKeyLimit : k > -kKeyLimit;
}

std::size_t Grid::hashed_bucket(const CellKey& key) const {
    // Hash the row (y, z) and add x, so that the x-neighbours of a cell are adjacent buckets.
    std::uint64_t h = static_cast<std::uint64_t>(key.y) * 0xC2B2AE3D27D4EB4Full;
    h ^= static_cast<std::uint64_t>(key.z) * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return static_cast<std::size_t>(h + static_cast<std::uint64_t>(key.x)) & mask_;
}

void Grid::rehash(std::size_t buckets) {
    // Re-link every occupied slot in slot order, so the lists do not depend on history.
    std::vector<bool> used(next_.size(), false);
    for (std::int32_t head : head_)
        for (std::int32_t s = head; s >= 0; s = next_[static_cast<std::size_t>(s)]) used[static_cast<std::size_t>(s)] = true;
    head_.assign(buckets, -1);
    mask_ = buckets - 1;
    size_ = 0;
    for (std::size_t s = 0; s < used.size(); ++s)
        if (used[s]) insert(static_cast<std::uint32_t>(s), key_[s]);
}

void Grid::insert(std::uint32_t slot, const CellKey& key) {
    if (slot >= next_.size()) {
        const std::size_t size = std::max<std::size_t>(slot + 1, 2 * next_.size());
        next_.resize(size, -1);
        prev_.resize(size, -1);
        key_.resize(size);
    }
    if (!dense_ && 2 * (size_ + 1) > head_.size()) rehash(2 * head_.size());
    const std::size_t b = bucket_of(key);
    key_[slot] = key;
    prev_[slot] = -1;
    next_[slot] = head_[b];
    if (head_[b] >= 0) prev_[static_cast<std::size_t>(head_[b])] = static_cast<std::int32_t>(slot);
    head_[b] = static_cast<std::int32_t>(slot);
    ++size_;
}

void Grid::erase(std::uint32_t slot) {
    const std::int32_t p = prev_[slot], n = next_[slot];
    if (p >= 0) next_[static_cast<std::size_t>(p)] = n;
    else head_[bucket_of(key_[slot])] = n;
    if (n >= 0) prev_[static_cast<std::size_t>(n)] = p;
    prev_[slot] = next_[slot] = -1;
    --size_;
}

void Grid::renumber(std::uint32_t from, std::uint32_t to) {
    const std::int32_t p = prev_[from], n = next_[from];
    if (p >= 0) next_[static_cast<std::size_t>(p)] = static_cast<std::int32_t>(to);
    else head_[bucket_of(key_[from])] = static_cast<std::int32_t>(to);
    if (n >= 0) prev_[static_cast<std::size_t>(n)] = static_cast<std::int32_t>(to);
    prev_[to] = p;
    next_[to] = n;
    key_[to] = key_[from];
    prev_[from] = next_[from] = -1;
}

}  // namespace ballistic::detail
