// Ballistic — spatial cells. Every ball lives in one cell at least one largest diameter wide,
// so a ball can only touch balls of the 27 cells around its own. Cells are kept in a hash
// table with intrusive doubly-linked lists (O(1) insert, erase and slot renumbering), so an
// unbounded world costs memory only for occupied cells; a periodic box wraps cell keys.
#pragma once

#include <ballistic/world.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace ballistic::detail {

struct CellKey {
    std::int64_t x = 0, y = 0, z = 0;
    std::int64_t operator[](int d) const { return d == 0 ? x : (d == 1 ? y : z); }
    std::int64_t& operator[](int d) { return d == 0 ? x : (d == 1 ? y : z); }
    friend bool operator==(const CellKey&, const CellKey&) = default;
};

class Grid {
public:
    // Cells at least `min_width` wide; a periodic box is cut into a whole number of cells per axis
    // (at least 3, checked by the caller). Sized for `capacity` balls; empties the grid.
    void configure(double min_width, const std::optional<Box>& periodic, std::size_t capacity);

    bool periodic() const { return periodic_; }
    double min_width() const { return min_width_; }
    CellKey key_of(Vec3 position) const;
    // Lower bound of cell k along axis d; upper bound is bound(d, k + 1).
    double bound(int d, std::int64_t k) const;
    // Neighbour of `key` at offset (dx, dy, dz); `shift` is the image shift to add to the
    // positions of balls found there (non-zero only across a periodic face).
    CellKey neighbour(const CellKey& key, int dx, int dy, int dz, Vec3& shift) const;
    // Key after leaving `key` through face `face` (axis = face / 2, upward when face is odd);
    // `shift` receives the position shift of a periodic wrap.
    CellKey across(const CellKey& key, int face, Vec3& shift) const;
    // Is there a cell beyond this face (false at the edge of the representable range)?
    bool has_face(const CellKey& key, int face) const;

    void insert(std::uint32_t slot, const CellKey& key);
    void erase(std::uint32_t slot);
    void renumber(std::uint32_t from, std::uint32_t to);  // slot `from` now lives at `to`
    const CellKey& key(std::uint32_t slot) const { return key_[slot]; }
    std::size_t size() const { return size_; }

    // fn(slot) for every ball whose cell is exactly `key`.
    template <class Fn>
    void for_each_in(const CellKey& key, Fn&& fn) const {
        for (std::int32_t s = head_[bucket_of(key)]; s >= 0; s = next_[static_cast<std::size_t>(s)]) {
            if (key_[static_cast<std::size_t>(s)] == key) fn(static_cast<std::uint32_t>(s));
        }
    }

private:
    std::size_t bucket_of(const CellKey& key) const;
    void rehash(std::size_t buckets);

    bool periodic_ = false;
    double min_width_ = 0.0;
    Vec3 origin_, width_, period_, upper_;
    std::array<std::int64_t, 3> cells_{};   // per axis in a periodic box
    std::vector<std::int32_t> head_;        // per bucket: first slot, -1 when empty (cold)
    std::vector<std::int32_t> next_, prev_; // per slot: list links (4 + 4 B)
    std::vector<CellKey> key_;              // per slot: cell (24 B)
    std::size_t mask_ = 0;
    std::size_t size_ = 0;
};

}  // namespace ballistic::detail
