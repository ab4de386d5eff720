#include "space/cells.hpp"

#include <algorithm>
#include <cmath>

namespace ballistic::detail {

void Cells::configure(double min_width, const std::optional<Box>& periodic, std::array<bool, 3> wraps,
                     std::size_t capacity) {
    periodic_ = periodic.has_value();
    wraps_ = periodic_ ? wraps : std::array<bool, 3>{};
    mixed_ = periodic_ && wraps_ != std::array<bool, 3>{true, true, true};
    min_width_ = min_width;
    dense_lo_ = {};
    dense_n_ = {};
    dense_count_ = 0;
    if (periodic_) {
        origin_ = periodic->min;
        upper_ = periodic->max;
        period_ = periodic->max - periodic->min;
        for (int d = 0; d < 3; ++d) {
            const double length = axis(period_, d);
            // At most kKeyLimit cells per axis: a huge box gets cells wider than min_width.
            cells_[static_cast<std::size_t>(d)] = static_cast<std::int64_t>(
                std::clamp(std::floor(length / min_width), 1.0, static_cast<double>(kKeyLimit)));
            set_axis(width_, d, length / static_cast<double>(cells_[static_cast<std::size_t>(d)]));
        }
    } else {
        const double centre = min_width >= kWholeSpace ? -0.5 * min_width : 0.0;
        origin_ = {centre, centre, centre};
        width_ = {min_width, min_width, min_width};
    }
    hashed_ = left_ = 0;
    next_.assign(capacity, -1);
    key_.assign(capacity, CellKey{});
    capacity_ = capacity;
    // A periodic box small enough gets one bucket per cell, laid out x-fastest: no collisions,
    // and the three x-neighbours of a cell share a cache line.
    if (periodic_) {
        const double cells = double(cells_[0]) * double(cells_[1]) * double(cells_[2]);
        if (cells <= dense_limit()) {
            dense_n_ = cells_;
            dense_count_ = static_cast<std::size_t>(cells);
        }
    }
    dense_changed();
    std::size_t buckets = 1024;
    while (buckets < 2 * capacity) buckets *= 2;
    if (dense_count_ > 0) buckets = kFewHashed;
    head_.assign(dense_count_ + buckets, -1);
    mask_ = buckets - 1;
}

bool Cells::fit_dense(const CellKey& lo, const CellKey& hi) {
    if (periodic_ || hashed_ > 0) return false;
    // A margin of an eighth of the extent (at least two cells) lets the balls spread a little
    // before they reach hashed cells; without room for it, two cells.
    for (const bool wide : {true, false}) {
        CellKey first;
        std::array<std::int64_t, 3> n{};
        double cells = 1.0;
        for (int d = 0; d < 3; ++d) {
            const std::int64_t extent = hi[d] - lo[d] + 1;
            const std::int64_t margin = kLeastMargin + (wide ? extent / 8 : 0);
            first[d] = static_cast<std::int32_t>(lo[d] - margin);
            n[static_cast<std::size_t>(d)] = extent + 2 * margin;
            cells *= double(n[static_cast<std::size_t>(d)]);
        }
        if (!(cells <= dense_limit())) continue;
        dense_lo_ = first;
        dense_n_ = n;
        dense_count_ = static_cast<std::size_t>(cells);
        dense_changed();
        head_.assign(dense_count_ + kFewHashed, -1);
        mask_ = kFewHashed - 1;
        return true;
    }
    return false;
}

bool Cells::fit_dense_slab(std::span<const CellKey> keys, CellKey lo, CellKey hi) {
    int d = 0;
    for (int e = 1; e < 3; ++e)
        if (hi[e] - lo[e] > hi[d] - lo[d]) d = e;
    double across = 1.0;  // cells of a layer across the axis, with fit_dense()'s least margins
    for (int e = 0; e < 3; ++e)
        if (e != d) across *= double(hi[e] - lo[e] + 1 + 2 * kLeastMargin);
    const double thickest = std::floor(dense_limit() / across) - double(2 * kLeastMargin);
    const std::int64_t extent = std::int64_t{hi[d]} - lo[d] + 1;
    if (!(thickest >= 8.0) || extent > std::int64_t{16} * static_cast<std::int64_t>(keys.size())) return false;
    const auto thickness = static_cast<std::int64_t>(thickest);
    std::vector<std::uint32_t> layer(static_cast<std::size_t>(extent), 0);  // balls per layer
    for (const CellKey& k : keys)
        if (k[d] >= lo[d] && k[d] <= hi[d]) ++layer[static_cast<std::size_t>(k[d] - lo[d])];
    std::uint64_t held = 0, most = 0;
    std::int64_t first = 0;
    for (std::int64_t k = 0; k < extent; ++k) {
        held += layer[static_cast<std::size_t>(k)];
        if (k >= thickness) held -= layer[static_cast<std::size_t>(k - thickness)];
        if (held > most) {
            most = held;
            first = std::max<std::int64_t>(0, k - thickness + 1);
        }
    }
    hi[d] = static_cast<std::int32_t>(lo[d] + std::min(extent - 1, first + thickness - 1));
    lo[d] = static_cast<std::int32_t>(lo[d] + first);
    return fit_dense(lo, hi);
}

void Cells::dense_changed() {
    for (std::size_t d = 0; d < 3; ++d) inner_n_[d] = std::max<std::int64_t>(dense_n_[d] - 2, 0);
    for (std::size_t c = 0; c < 27; ++c) {
        const auto [x, y, z] = kNear[c];
        near_offset_[c] = (x - 1) + dense_n_[0] * ((y - 1) + dense_n_[1] * (z - 1));
    }
}

double Cells::dense_limit() const { return 16.0 * double(std::max<std::size_t>(capacity_, 1024)); }

CellKey Cells::key_of(Vec3 position) const {
    CellKey key;
    for (int d = 0; d < 3; ++d) {
        const double c = std::floor((axis(position, d) - axis(origin_, d)) / axis(width_, d));
        std::int64_t k = static_cast<std::int64_t>(std::clamp(c, -double(kKeyLimit), double(kKeyLimit)));
        if (periodic_) k = std::clamp<std::int64_t>(k, 0, cells_[static_cast<std::size_t>(d)] - 1);
        key[d] = static_cast<std::int32_t>(k);
    }
    return key;
}

CellKey Cells::across(const CellKey& key, int face, Vec3& shift) const {
    const int d = face / 2;
    CellKey out = key;
    out[d] += (face & 1) ? 1 : -1;
    shift = {};
    if (periodic_ && wraps(d)) {
        const std::int64_t n = cells_[static_cast<std::size_t>(d)];
        // Leaving through the low face re-enters at the high one: the position moves up a period.
        if (out[d] < 0) {
            out[d] = static_cast<std::int32_t>(out[d] + n);
            set_axis(shift, d, axis(period_, d));
        } else if (out[d] >= n) {
            out[d] = static_cast<std::int32_t>(out[d] - n);
            set_axis(shift, d, -axis(period_, d));
        }
    }
    return out;
}

std::size_t Cells::hashed_bucket(const CellKey& key) const {
    // Hash the row (y, z) and add x, so that the x-neighbours of a cell are adjacent buckets.
    std::uint64_t h = static_cast<std::uint64_t>(key.y) * 0xC2B2AE3D27D4EB4Full;
    h ^= static_cast<std::uint64_t>(key.z) * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return dense_count_ + (static_cast<std::size_t>(h + static_cast<std::uint64_t>(key.x)) & mask_);
}

void Cells::rehash(std::size_t buckets) {
    // Re-link every hashed slot in slot order, so the lists do not depend on history.
    std::vector<std::uint32_t> slots;
    for (std::size_t b = dense_count_; b < head_.size(); ++b)
        for (std::int32_t s = head_[b]; s >= 0; s = next_[static_cast<std::size_t>(s)])
            slots.push_back(static_cast<std::uint32_t>(s));
    std::sort(slots.begin(), slots.end());
    head_.reserve(dense_count_ + buckets);  // what may fail, before anything changes
    head_.resize(dense_count_);
    head_.resize(dense_count_ + buckets, -1);
    mask_ = buckets - 1;
    for (const std::uint32_t s : slots) link(s, key_[s]);
}

void Cells::link(std::uint32_t slot, const CellKey& key, std::size_t bucket) {
    set_key(slot, key);
    next_[slot] = head_[bucket];
    head_[bucket] = static_cast<std::int32_t>(slot);
}

std::int32_t& Cells::link_to(std::uint32_t slot) {
    std::int32_t* at = &head_[bucket_of(key_[slot])];
    while (*at != static_cast<std::int32_t>(slot)) at = &next_[static_cast<std::size_t>(*at)];
    return *at;
}

void Cells::unlink(std::uint32_t slot) {
    link_to(slot) = next_[slot];
    next_[slot] = -1;
}

void Cells::insert(std::uint32_t slot, const CellKey& key) {
    if (slot >= next_.size()) {
        const std::size_t size = std::max<std::size_t>(slot + 1, 2 * next_.size());
        next_.resize(size, -1);
        key_.resize(size);
    }
    if (!in_dense(key)) {
        room_for_hashed(hashed_ + 1);
        ++hashed_;
    }
    link(slot, key);
}

void Cells::room_for_hashed(std::size_t hashed) {
    if (2 * hashed > mask_ + 1) rehash(2 * (mask_ + 1));
}

void Cells::assign(const std::vector<CellKey>& keys, Parallel& parallel) {
    const std::size_t n = keys.size();
    if (n > next_.size()) {
        next_.resize(n, -1);
        key_.resize(n);
    }
    // A share of at least kMinShare cells: below that a second task costs more than it saves.
    constexpr std::size_t kMinShare = std::size_t{1} << 16;
    const std::size_t shares = std::clamp<std::size_t>(dense_count_ / kMinShare, 1,
                                                       static_cast<std::size_t>(parallel.concurrency()));
    parallel.for_each(shares, [&](std::size_t share) {
        const std::size_t lo = dense_count_ * share / shares, hi = dense_count_ * (share + 1) / shares;
        for (std::size_t s = 0; s < n; ++s) {
            if (!in_dense(keys[s])) continue;
            const std::size_t b = dense_index(keys[s]);
            if (b < lo || b >= hi) continue;
            key_[s] = keys[s];
            next_[s] = head_[b];
            head_[b] = static_cast<std::int32_t>(s);
        }
    });
    for (std::size_t s = 0; s < n; ++s)
        if (!in_dense(keys[s])) insert(static_cast<std::uint32_t>(s), keys[s]);
    left_ = 0;
}

void Cells::erase(std::uint32_t slot) {
    if (!in_dense(key_[slot])) --hashed_;
    unlink(slot);
}

void Cells::move(std::uint32_t slot, const CellKey& key) {
    const bool from_dense = in_dense(key_[slot]), to_dense = in_dense(key);
    if (from_dense && to_dense) {
        unlink(slot);
        link(slot, key);
        return;
    }
    // Into a hashed cell: the buckets it may need first, so that a failure to allocate leaves the
    // ball where it was.
    if (!to_dense) room_for_hashed(hashed_ - (from_dense ? 0 : 1) + 1);
    erase(slot);
    insert(slot, key);
    left_ += from_dense;  // it left the dense cells
}

std::int32_t Cells::move_dense(std::uint32_t slot, const CellKey& key) {
    // Both cells are dense: their buckets are their dense indices.
    std::int32_t* at = &head_[dense_index(key_[slot])];
    std::int32_t before = -1;
    while (*at != static_cast<std::int32_t>(slot)) {
        before = *at;
        at = &next_[static_cast<std::size_t>(*at)];
    }
    *at = next_[slot];
    link(slot, key, dense_index(key));
    return before;
}

void Cells::put_back(std::uint32_t slot, const CellKey& key, std::int32_t before) noexcept {
    unlink(slot);
    set_key(slot, key);
    std::int32_t& link = before < 0 ? head_[bucket_of(key)] : next_[static_cast<std::size_t>(before)];
    next_[slot] = link;
    link = static_cast<std::int32_t>(slot);
}

void Cells::renumber(std::uint32_t from, std::uint32_t to) {
    link_to(from) = static_cast<std::int32_t>(to);
    next_[to] = next_[from];
    key_[to] = key_[from];
    next_[from] = -1;
}

}  // namespace ballistic::detail
