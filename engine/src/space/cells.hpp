// Ballistic — spatial cells. Every ball lives in one cell at least one largest diameter wide,
// so a ball can only touch balls of the 27 cells around its own. Cells are buckets holding
// intrusive singly-linked lists: O(1) insert; erase and slot renumbering walk the ball's bucket
// list, which predictions walk anyway (and this saves 4 bytes per ball). A periodic box, and the
// block of cells the balls of any other world occupy (with a margin), get one bucket per cell
// ("dense" cells: no key comparisons, and distinct cells never share a list); every other cell is
// hashed into shared buckets, so an unbounded world costs memory only for occupied cells.
#pragma once

#include "base/columns.hpp"
#include "base/axes.hpp"
#include "base/parallel.hpp"
#include "base/prefetch.hpp"

#include <ballistic/box.hpp>

#include <optional>
#include <span>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace ballistic::detail {

// A cell's coordinates along each axis, within ±kKeyLimit: 12 bytes per ball, and sums and
// differences of a few keys (read as 64-bit values) never overflow.
inline constexpr std::int64_t kKeyLimit = std::int64_t{1} << 29;  // beyond it, cells stop splitting
// Cells this wide (or wider) are centred on the origin: one cell holds every finite position the
// engine accepts (within 10³⁰) and far beyond.
inline constexpr double kWholeSpace = 0x1p106;

struct CellKey {
    std::int32_t x = 0, y = 0, z = 0;
    std::int64_t operator[](int d) const { return d == 0 ? x : (d == 1 ? y : z); }
    std::int32_t& operator[](int d) { return d == 0 ? x : (d == 1 ? y : z); }
    friend bool operator==(const CellKey&, const CellKey&) = default;
};

class Cells {
public:
    // Cells at least `min_width` wide; a periodic box is cut into a whole number of cells per axis
    // (at least 3, checked by the caller). Sized for `capacity` balls; empties the cells. A
    // periodic box is dense unless it is huge and nearly empty.
    // Along an axis the box does not wrap (`wraps`), its cells end at its faces: the edge cells
    // reach out to infinity and have no face there.
    void configure(double min_width, const std::optional<Box>& periodic, std::array<bool, 3> wraps,
                   std::size_t capacity);
    // Outside a periodic box, on an empty cells: makes the cells from `lo` to `hi` (the block the
    // balls occupy) dense, with a margin, unless that takes many more cells than there are balls.
    // True when it did.
    bool fit_dense(const CellKey& lo, const CellKey& hi);
    // When the block from lo to hi is too large for dense cells (a pile under a falling cloud in
    // a tall room): along its longest axis, the slab as thick as the dense block may be that
    // holds the most of the balls at `keys`, if that is at least 8 cells thick.
    bool fit_dense_slab(std::span<const CellKey> keys, CellKey lo, CellKey hi);

    bool periodic() const { return periodic_; }
    bool wraps(int d) const { return wraps_[static_cast<std::size_t>(d)]; }  // periodic along axis d
    std::int64_t cells(int d) const { return cells_[static_cast<std::size_t>(d)]; }  // per axis, periodic
    double min_width() const { return min_width_; }
    CellKey key_of(Vec3 position) const;
    // Lower bound of cell k along axis d; upper bound is bound(d, k + 1).
    double bound(int d, std::int64_t k) const {
        if (periodic_ && k >= cells_[static_cast<std::size_t>(d)]) return axis(upper_, d);
        return axis(origin_, d) + static_cast<double>(k) * axis(width_, d);
    }
    // Key after leaving `key` through face `face` (axis = face / 2, upward when face is odd);
    // `shift` receives the position shift of a periodic wrap.
    CellKey across(const CellKey& key, int face, Vec3& shift) const;
    // Is there a cell beyond this face (false at the edge of the representable range)?
    bool has_face(const CellKey& key, int face) const {
        const int d = face / 2;
        const std::int64_t k = key[d];
        if (!periodic_) return (face & 1) ? k < kKeyLimit : k > -kKeyLimit;
        if (!mixed_ || wraps(d)) return true;
        return (face & 1) ? k + 1 < cells_[static_cast<std::size_t>(d)] : k > 0;
    }

    // fn(slot) for every ball in the cells within `reach` cells of `key` (each cell once, also
    // when the reach wraps around a periodic box).
    template <class Fn>
    void for_each_within(const CellKey& key, std::int64_t reach, Fn&& fn) const {
        std::vector<std::int32_t> k[3];
        for (int d = 0; d < 3; ++d) {
            const std::int64_t n = cells_[static_cast<std::size_t>(d)];
            if (periodic_ && (!wraps(d) || 2 * reach + 1 >= n)) {
                // All of a wrapping axis; along one that does not wrap, the cells in the box.
                const std::int64_t first = wraps(d) ? 0 : std::max<std::int64_t>(0, key[d] - reach);
                const std::int64_t last = wraps(d) ? n - 1 : std::min<std::int64_t>(n - 1, key[d] + reach);
                for (std::int64_t c = first; c <= last; ++c) k[d].push_back(static_cast<std::int32_t>(c));
                continue;
            }
            for (std::int64_t o = -reach; o <= reach; ++o) {
                std::int64_t c = key[d] + o;
                if (periodic_) c = ((c % n) + n) % n;
                k[d].push_back(static_cast<std::int32_t>(c));
            }
        }
        for (const std::int32_t z : k[2])
            for (const std::int32_t y : k[1])
                for (const std::int32_t x : k[0]) {
                    const CellKey cell{x, y, z};
                    const bool exact = in_dense(cell);
                    for (std::int32_t s = head_[bucket_of(cell)]; s >= 0; s = next_[static_cast<std::size_t>(s)])
                        if (exact || key_[static_cast<std::size_t>(s)] == cell) fn(static_cast<std::uint32_t>(s));
                }
    }

    // Chebyshev distance between two cells, in cells (the shorter way round a periodic box).
    std::int64_t distance(const CellKey& a, const CellKey& b) const {
        std::int64_t worst = 0;
        for (int d = 0; d < 3; ++d) {
            std::int64_t gap = a[d] > b[d] ? a[d] - b[d] : b[d] - a[d];
            if (periodic_ && wraps(d)) gap = std::min(gap, cells_[static_cast<std::size_t>(d)] - gap);
            worst = std::max(worst, gap);
        }
        return worst;
    }

    void insert(std::uint32_t slot, const CellKey& key);
    // On a cells just configured (and fitted): inserts slots 0 … n − 1 into the cells `keys`, the
    // lists coming out as insert() in slot order makes them. The dense cells are shared out
    // between tasks that each scan every key and link only the balls of their share, so no two
    // tasks write one list; the few balls in hashed cells follow, in slot order.
    void assign(const std::vector<CellKey>& keys, Parallel& parallel);
    // Have more than an eighth of `balls` left the dense cells since assign()? A block fitted
    // where they are now may hold them again.
    bool outgrown(std::size_t balls) const { return !periodic_ && left_ > balls / 8; }
    void erase(std::uint32_t slot);
    // Moves a ball to another cell. Between two dense cells it touches only the lists of those two
    // cells, so balls far apart may move concurrently.
    void move(std::uint32_t slot, const CellKey& key);
    // The same between dense cells, returning the ball that preceded it in its old list (-1: it
    // was first), and its undoing: the ball back into cell `key` right after `before`, exactly
    // where it was once every later change of that list has been undone (the order of a list
    // decides the order of the sums of the sleeping tests).
    std::int32_t move_dense(std::uint32_t slot, const CellKey& key);
    void put_back(std::uint32_t slot, const CellKey& key, std::int32_t before) noexcept;
    void renumber(std::uint32_t from, std::uint32_t to);  // slot `from` now lives at `to`
    const CellKey& key(std::uint32_t slot) const { return key_[slot]; }
    // The same, read while another region may move the ball (region_loop.cpp).
    CellKey key_now(std::uint32_t slot) const {
        const CellKey& k = key_[slot];
        auto load = [](const std::int32_t& c) { return std::atomic_ref<const std::int32_t>(c).load(std::memory_order_relaxed); };
        return {load(k.x), load(k.y), load(k.z)};
    }
    void prefetch(std::uint32_t slot) const { detail::prefetch(&key_[slot]); }
    bool dense(const CellKey& key) const { return in_dense(key); }
    // Are this cell and its 26 neighbours dense cells?
    bool dense_near(const CellKey& key) const {
        if (periodic_) return dense_count_ > 0;
        for (int d = 0; d < 3; ++d)
            if (key[d] <= dense_lo_[d] || key[d] + 1 >= dense_lo_[d] + dense_n_[static_cast<std::size_t>(d)])
                return false;
        return true;
    }
    // The dense cells, numbered 0 … dense_count() − 1.
    std::size_t dense_count() const { return dense_count_; }
    // Patches of 2^shift[d] dense cells along each axis d (the last along an axis may be
    // thinner), numbered 0 … count − 1 with the axes of the least shift varying slowest (so the
    // patches one cell wide along an axis lie in planes of their own): patches() for these cells,
    // then the patch of a dense cell without a division.
    struct Patches {
        std::array<int, 3> shift{};
        std::array<std::int64_t, 3> stride{};  // per axis: from a patch to the next along it
        std::size_t count = 0;
    };
    Patches patches(const std::array<int, 3>& shift) const {
        Patches p{shift, {}, 0};
        std::array<std::size_t, 3> order{0, 1, 2};  // fastest first
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return shift[a] > shift[b]; });
        std::int64_t stride = 1;
        for (const std::size_t d : order) {
            p.stride[d] = stride;
            stride *= (dense_n_[d] + (std::int64_t{1} << shift[d]) - 1) >> shift[d];  // patches along d
        }
        if (dense_count_ > 0) p.count = static_cast<std::size_t>(stride);
        return p;
    }
    std::size_t patch_of(const CellKey& key, const Patches& p) const {
        return static_cast<std::size_t>(((key.x - dense_lo_.x) >> p.shift[0]) * p.stride[0] +
                                        ((key.y - dense_lo_.y) >> p.shift[1]) * p.stride[1] +
                                        ((key.z - dense_lo_.z) >> p.shift[2]) * p.stride[2]);
    }
    // fn(number) for every patch holding a dense cell among the 27 around `key` (across the faces
    // of a periodic box that wrap), each once.
    template <class Fn>
    void for_each_patch_near(const CellKey& key, const Patches& patches, Fn&& fn) const {
        std::int64_t k[3][3];
        int n[3] = {0, 0, 0};
        for (int d = 0; d < 3; ++d) {
            const auto axis_d = static_cast<std::size_t>(d);
            for (int o = -1; o <= 1; ++o) {
                std::int64_t c = key[d] + o;
                if (periodic_ && wraps(d)) c += c < 0 ? cells_[axis_d] : c >= cells_[axis_d] ? -cells_[axis_d] : 0;
                const std::int64_t i = c - dense_lo_[d];
                if (i < 0 || i >= dense_n_[axis_d]) continue;
                const std::int64_t patch = (i >> patches.shift[axis_d]) * patches.stride[axis_d];
                bool seen = false;  // neighbours may share a patch; so may the cells across a wrap
                for (int m = 0; m < n[d]; ++m) seen = seen || k[d][m] == patch;
                if (!seen) k[d][n[d]++] = patch;
            }
        }
        for (int z = 0; z < n[2]; ++z)
            for (int y = 0; y < n[1]; ++y)
                for (int x = 0; x < n[0]; ++x) fn(static_cast<std::size_t>(k[0][x] + k[1][y] + k[2][z]));
    }
    // Cells per axis of the dense block (of the box, when periodic); 0 without dense cells.
    std::int64_t dense_cells(int d) const { return dense_count_ > 0 ? dense_n_[static_cast<std::size_t>(d)] : 0; }
    std::int64_t dense_lo(int d) const { return dense_lo_[d]; }
    std::size_t bytes() const {
        return head_.size() * sizeof(std::int32_t) + next_.size() * (sizeof(std::int32_t) + sizeof(CellKey));
    }

    // The 27 cells around a cell, numbered x + 3 y + 9 z by their offsets + 1 along each axis:
    // all of them, or the 9 of the layer beyond one face (the cells a ball entering the cell
    // through the opposite face did not have around it before).
    static constexpr std::uint32_t kAllNear = (1u << 27) - 1;
    struct Offsets {
        std::uint8_t x, y, z;
    };
    static constexpr std::array<Offsets, 27> kNear = [] {  // cell c's offsets + 1 along each axis
        std::array<Offsets, 27> near{};
        for (std::size_t c = 0; c < 27; ++c)
            near[c] = {static_cast<std::uint8_t>(c % 3), static_cast<std::uint8_t>(c / 3 % 3),
                       static_cast<std::uint8_t>(c / 9)};
        return near;
    }();
    static std::uint32_t layer_beyond(int face) {
        static constexpr std::array<std::uint32_t, 6> kLayers = [] {
            std::array<std::uint32_t, 6> layers{};
            for (int f = 0; f < 6; ++f) {
                const int stride = f / 2 == 0 ? 1 : (f / 2 == 1 ? 3 : 9), offset = (f & 1) ? 2 : 0;
                for (int c = 0; c < 27; ++c)
                    if (c / stride % 3 == offset) layers[static_cast<std::size_t>(f)] |= 1u << c;
            }
            return layers;
        }();
        return kLayers[static_cast<std::size_t>(face)];
    }

    // What for_each_near() hands as the shift when every cell around `key` is dense and none is
    // a periodic image.
    struct NoShift {};
    // fn(slot, shift) for every ball in the cells of `cells` around `key` (all 27, its own
    // included, by default), where `shift` is the periodic image shift to add to that ball's
    // position: NoShift{} for every ball when all cells around `key` are dense and none is a
    // periodic image, otherwise a Vec3 (zero for cells that are no image). The lists are walked
    // in lockstep, one element of each per round: the loads of a round are independent, so their
    // cache misses overlap instead of forming one long dependent chain. Callers must not depend
    // on the visiting order.
    template <class Fn>
    void for_each_near(const CellKey& key, Fn&& fn, std::uint32_t cells = kAllNear) const {
        std::int32_t at[27];      // the next element of each walked list
        int lists = 0;
        if (dense_inside(key)) {  // most cells: the buckets around it lie at fixed offsets from its own
            const auto centre = static_cast<std::int64_t>(dense_index(key));
            for (std::uint32_t m = cells; m != 0; m &= m - 1) {
                const std::int32_t head = head_[static_cast<std::size_t>(centre + near_offset_[std::countr_zero(m)])];
                at[lists] = head;
                lists += head >= 0;
            }
            return walk_lists(at, lists, fn);
        }
        std::int32_t k[3][3];
        double shift[3][3];
        near_coordinates(key, k, shift);
        // Past the face of a box that does not wrap there are no cells (near_coordinates() named
        // some anyway).
        if (mixed_)
            for (int d = 0; d < 3; ++d) {
                if (wraps(d)) continue;
                if (key[d] == 0) cells &= ~layer_beyond(2 * d);
                if (key[d] + 1 == cells_[static_cast<std::size_t>(d)]) cells &= ~layer_beyond(2 * d + 1);
            }
        // Per axis and offset: is that coordinate inside the dense block, and its term of the
        // dense index (a cell is dense when all three of its coordinates are). Some cell around
        // `key` is not dense or lies across a periodic face (else dense_inside() above).
        bool inside[3][3];
        std::int64_t term[3][3];
        for (int d = 0; d < 3; ++d) {
            const std::int64_t stride = d == 0 ? 1 : (d == 1 ? dense_n_[0] : dense_n_[0] * dense_n_[1]);
            for (int o = 0; o < 3; ++o) {
                const std::int64_t i = k[d][o] - dense_lo_[d];
                inside[d][o] = dense_count_ > 0 && (periodic_ || in_dense(d, i));
                term[d][o] = inside[d][o] ? i * stride : 0;  // far outside, i * stride could overflow
            }
        }
        std::uint8_t cell[27];    // which cell that list belongs to
        std::uint32_t exact = 0;  // bit c: cell c is dense, its list holds no other cell's balls
        bool all_dense = true;    // a dense periodic box, its cells wrapped
        for (int d = 0; d < 3; ++d)
            for (int o = 0; o < 3; ++o) all_dense = all_dense && inside[d][o];
        // Unrolled: the cell numbers become constants and the index terms stay in registers.
#pragma GCC unroll 3
        for (int z = 0; z < 3; ++z) {
#pragma GCC unroll 3
            for (int y = 0; y < 3; ++y) {
#pragma GCC unroll 3
                for (int x = 0; x < 3; ++x) {
                    const int c = x + 3 * y + 9 * z;
                    if (!(cells & (1u << c))) continue;
                    std::int32_t head;
                    if (all_dense || (inside[0][x] && inside[1][y] && inside[2][z])) {
                        exact |= 1u << c;
                        head = head_[static_cast<std::size_t>(term[0][x] + term[1][y] + term[2][z])];
                    } else {
                        head = head_[hashed_bucket(CellKey{k[0][x], k[1][y], k[2][z]})];
                    }
                    at[lists] = head;
                    cell[lists] = static_cast<std::uint8_t>(c);
                    lists += head >= 0;
                }
            }
        }
        while (lists > 0) {
            int kept = 0;
            for (int l = 0; l < lists; ++l) {
                const auto s = static_cast<std::size_t>(at[l]);
                const int c = cell[l];
                const auto [x, y, z] = kNear[static_cast<std::size_t>(c)];
                if (exact & (1u << c) || key_[s] == CellKey{k[0][x], k[1][y], k[2][z]})
                    fn(static_cast<std::uint32_t>(s), Vec3{shift[0][x], shift[1][y], shift[2][z]});
                cell[kept] = cell[l];
                at[kept] = next_[s];
                kept += next_[s] >= 0;
            }
            lists = kept;
        }
    }

private:
    double dense_limit() const;  // most dense cells: 16 per ball
    // The lists from at[0, lists) walked in lockstep (for_each_near()), every one holding only its
    // own dense cell's balls, none a periodic image.
    template <class Fn>
    void walk_lists(std::int32_t (&at)[27], int lists, Fn& fn) const {
        while (lists > 0) {
            int kept = 0;
            for (int l = 0; l < lists; ++l) {
                const auto s = static_cast<std::size_t>(at[l]);
                fn(static_cast<std::uint32_t>(s), NoShift{});
                at[kept] = next_[s];
                kept += next_[s] >= 0;
            }
            lists = kept;
        }
    }
    // Are the 27 cells around `key` dense, and none across a periodic face?
    bool dense_inside(const CellKey& key) const {
        auto inside = [&](std::size_t d, std::int64_t i) {
            return static_cast<std::uint64_t>(i - 1) < static_cast<std::uint64_t>(inner_n_[d]);
        };
        return inside(0, std::int64_t{key.x} - dense_lo_.x) && inside(1, std::int64_t{key.y} - dense_lo_.y) &&
               inside(2, std::int64_t{key.z} - dense_lo_.z);
    }
    // After the dense block changed: inner_n_ and near_offset_.
    void dense_changed();
    bool in_dense(const CellKey& key) const {
        if (periodic_) return dense_count_ > 0;
        return in_dense(0, std::int64_t{key.x} - dense_lo_.x) && in_dense(1, std::int64_t{key.y} - dense_lo_.y) &&
               in_dense(2, std::int64_t{key.z} - dense_lo_.z);
    }
    // 0 <= i < dense_n_[d], in one comparison (a negative i wraps round to a huge one).
    bool in_dense(int d, std::int64_t i) const {
        return static_cast<std::uint64_t>(i) < static_cast<std::uint64_t>(dense_n_[static_cast<std::size_t>(d)]);
    }
    std::size_t dense_index(const CellKey& key) const {
        return static_cast<std::size_t>((key.x - dense_lo_.x) +
                                        dense_n_[0] * ((key.y - dense_lo_.y) + dense_n_[1] * (key.z - dense_lo_.z)));
    }
    // Hashed buckets follow the dense ones in head_.
    std::size_t hashed_bucket(const CellKey& key) const;
    // for_each_near()'s first step where the cells around `key` are not all dense or lie across
    // a periodic face (inlined, as for_each_near() is into every prediction). Per axis, the
    // coordinates k of the cells at offsets −1, 0, +1 from `key` (wrapped into a periodic box)
    // and the position shift of each periodic image.
    [[gnu::always_inline]] inline void near_coordinates(const CellKey& key, std::int32_t (&k)[3][3],
                                                        double (&shift)[3][3]) const {
        for (int d = 0; d < 3; ++d) {
            const std::int64_t n = cells_[static_cast<std::size_t>(d)];
            const double period = d == 0 ? period_.x : (d == 1 ? period_.y : period_.z);
            for (int o = 0; o < 3; ++o) {
                std::int64_t c = key[d] + o - 1;
                double s = 0.0;
                if (periodic_ && c < 0) { c += n; s = -period; }
                if (periodic_ && c >= n) { c -= n; s = period; }
                k[d][o] = static_cast<std::int32_t>(c);
                shift[d][o] = s;
            }
        }
    }
    std::size_t bucket_of(const CellKey& key) const { return in_dense(key) ? dense_index(key) : hashed_bucket(key); }
    // Ball `slot` first in the list of cell `key`, in its bucket (bucket_of(key) unless known).
    void link(std::uint32_t slot, const CellKey& key) { link(slot, key, bucket_of(key)); }
    void link(std::uint32_t slot, const CellKey& key, std::size_t bucket);
    void set_key(std::uint32_t slot, const CellKey& key) {  // atomically, for key_now()
        CellKey& k = key_[slot];
        std::atomic_ref<std::int32_t>(k.x).store(key.x, std::memory_order_relaxed);
        std::atomic_ref<std::int32_t>(k.y).store(key.y, std::memory_order_relaxed);
        std::atomic_ref<std::int32_t>(k.z).store(key.z, std::memory_order_relaxed);
    }
    // The list link (a bucket head or a ball's next) that points at `slot`: found by walking its
    // bucket's list (the balls of its cell; of a few cells in a shared hashed bucket; of every
    // ball out there in the outermost cells), which predictions walk anyway.
    std::int32_t& link_to(std::uint32_t slot);
    void unlink(std::uint32_t slot);
    void rehash(std::size_t buckets);  // allocates first: a failure leaves the cells as they were
    void room_for_hashed(std::size_t hashed);  // enough hashed buckets for this many balls

    static constexpr std::size_t kFewHashed = 64;  // hashed buckets beside dense cells, to start
    static constexpr std::int64_t kLeastMargin = 2;  // dense cells on each side of the balls' block

    bool periodic_ = false;
    std::array<bool, 3> wraps_{};  // per axis, in a periodic box
    bool mixed_ = false;           // a periodic box that does not wrap along some axis
    double min_width_ = 0.0;
    Vec3 origin_, width_, period_, upper_;
    std::array<std::int64_t, 3> cells_{};   // per axis in a periodic box
    CellKey dense_lo_;                      // first dense cell
    std::array<std::int64_t, 3> dense_n_{}; // dense cells per axis
    std::size_t dense_count_ = 0;           // dense cells (their buckets come first)
    std::array<std::int64_t, 3> inner_n_{}; // dense cells per axis whose neighbours along it are dense
    std::array<std::int64_t, 27> near_offset_{};  // of each near cell's dense index from its centre's
    Column<std::int32_t> head_;             // per bucket: first slot, -1 when empty (cold)
    Column<std::int32_t> next_;             // per slot: list link (4 B)
    Column<CellKey> key_;                   // per slot: cell (12 B)
    std::size_t mask_ = 0;                  // hashed buckets: count − 1
    std::size_t hashed_ = 0;                // balls in hashed buckets
    std::size_t left_ = 0;                  // moves out of the dense cells since assign()
    std::size_t capacity_ = 0;              // balls the cells was configured for
};

}  // namespace ballistic::detail
