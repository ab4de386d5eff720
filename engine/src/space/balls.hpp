// Ballistic — the ball store: every live ball's state as structure of arrays, and the table of
// what balls rest on.
#pragma once

#include <ballistic/types.hpp>

#include "base/columns.hpp"
#include "base/parallel.hpp"
#include "base/prefetch.hpp"

#include <tbb/concurrent_unordered_map.h>

#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace ballistic::detail {

class SnapshotReader;
class SnapshotWriter;
struct StaticCounts;

inline constexpr std::int32_t kNoSupport = -1;
using Supports = std::array<std::int32_t, 3>;  // planes a ball rests on, kNoSupport when unused

// What balls rest on: each set of supports in use once, asleep or awake, with the acceleration it
// leaves (g with the support normals' components removed; zero for a sleeping ball). A ball holds
// the index of its entry: 4 bytes instead of 36 for its own supports and acceleration. Entries
// are added concurrently by parallel event processing (an addition locks; looking up and reading
// do not) and never move or change until reset(). They are kept in segments that never move (the
// first holds 16 entries, each next as many as all before it), allocated with operator new: an
// addition that runs out of memory changes nothing, and the next one may succeed.
class RestTable {
public:
    struct Rest {
        Supports supports;
        bool asleep;
        Vec3 acceleration;
    };
    static constexpr std::uint32_t kNone = 0;  // resting on nothing, awake: the acceleration is g

    void reset(Vec3 gravity);  // only kNone
    const Rest& operator[](std::uint32_t k) const {
        const std::size_t s = segment_of(k);
        return segments_[s][k - first_of(s)];
    }
    // The index of this entry, added if new.
    std::uint32_t intern(const Supports& supports, bool asleep, Vec3 acceleration);
    std::size_t size() const { return size_; }
    std::size_t bytes() const;  // table and index, about
    // Snapshots: every entry. restore() reads them into a table holding only kNone (after
    // reset()): each set of supports once, each support a plane or block face of `statics`, the
    // first entry kNone's. Returns the count.
    void save(SnapshotWriter& out) const;
    std::size_t restore(SnapshotReader& in, const StaticCounts& statics);
    // Exchanges the tables (never allocates): a table built aside takes over at once.
    void swap(RestTable& other) {
        segments_.swap(other.segments_);
        std::swap(size_, other.size_);
        index_.swap(other.index_);
        std::swap(indexed_, other.indexed_);
    }

private:
    using Key = std::array<std::int32_t, 4>;  // the supports, then whether asleep
    static Key key_of(const Supports& s, bool asleep) { return {s[0], s[1], s[2], asleep}; }
    struct Hash {
        std::size_t operator()(const Key& s) const;
    };
    static constexpr std::size_t kFirst = 16;  // entries of the first segment
    static constexpr std::size_t kSegments = 28;  // room for 16 · 2^27 = 2^31 entries
    static std::size_t segment_of(std::size_t k) { return k < kFirst ? 0 : std::bit_width(k / kFirst); }
    static std::size_t first_of(std::size_t s) { return s == 0 ? 0 : kFirst << (s - 1); }
    static std::size_t length_of(std::size_t s) { return s == 0 ? kFirst : first_of(s); }
    // Appends an entry (under `adding_`); its index.
    std::uint32_t append(const Rest& rest);
    std::array<std::unique_ptr<Rest[]>, kSegments> segments_;
    std::size_t size_ = 0;
    tbb::concurrent_unordered_map<Key, std::uint32_t, Hash> index_;
    std::size_t indexed_ = 0;  // the entries [0, indexed_) are in the index (all, but after a failure)
    std::mutex adding_;
};

// Structure of arrays, one slot per live ball, dense (removal moves the last slot into the
// hole). A ball's path from its local time t is p + v τ + ½ a τ², τ = T − t: balls are only
// advanced when an event or a change between steps touches them. The end of a step writes where
// they are then into columns of their own (`view_*`), for World::balls(): rewriting the path's
// start every step rounded it each time, and a ball in flight for 10⁶ steps drifted 10⁻⁵ off the
// path its next collision had been predicted on.
struct Balls {
    Column<double> x, y, z;            // centre at local time t (hot, 8 B each)
    Column<double> vx, vy, vz;         // velocity at local time t (hot, 8 B each)
    Column<double> t;                  // local time (hot, 8 B)
    Column<double> radius;             // (warm, 8 B)
    Column<double> inv_mass;           // (warm, 8 B)
    Column<std::uint64_t> counter;     // events so far; invalidates partners' predictions (8 B)
    Column<std::uint32_t> rest;        // its entry in `rests`: supports, asleep, acceleration (4 B)
    // Since when, and for how many of its events, the ball has been slow (sleeping; cold, 12 B).
    Column<double> quiet_since;
    Column<std::uint32_t> quiet_events;
    // Collisions in a row in a jam, each at the instant of the one before or after a travel
    // below rounding (sleep.cpp; cold, 4 B).
    Column<std::uint32_t> jam;
    // Where the ball was when last seen to move, and since when it has stayed within 1 % of its
    // radius of there, as seen at the tests of sleeping (sleep.cpp; cold, 32 B).
    Column<double> still_x, still_y, still_z, still_since;
    // Position and velocity at the world's time (World::balls()), as of the end of the last step
    // or the last change between steps (cold, 48 B).
    Column<double> view_x, view_y, view_z, view_vx, view_vy, view_vz;
    Column<BallId> id;                 // handle of the ball in this slot (cold, 8 B)
    Column<std::uint64_t> user;        // the embedder's value (cold, 8 B)
    RestTable rests;

    std::size_t size() const { return x.size(); }
    Vec3 position(std::size_t s) const { return {x[s], y[s], z[s]}; }
    Vec3 velocity(std::size_t s) const { return {vx[s], vy[s], vz[s]}; }
    Vec3 view_position(std::size_t s) const { return {view_x[s], view_y[s], view_z[s]}; }
    Vec3 acceleration(std::size_t s) const { return rests[rest[s]].acceleration; }
    const Supports& supports(std::size_t s) const { return rests[rest[s]].supports; }
    bool asleep(std::size_t s) const {  // kNone (awake on nothing) without reading the table
        const std::uint32_t k = rest[s];
        return k != RestTable::kNone && rests[k].asleep;
    }
    // The ball is not quiet: its history of slow events begins again at `now`.
    void restart_quiet(std::size_t s, double now) {
        quiet_since[s] = now;
        quiet_events[s] = 0;
    }
    // What position_at() and velocity_at() read, and the radius, as plain pointers (which a
    // loop that stores elsewhere need not reload).
    struct MotionColumns {
        std::array<const double*, 8> column;
        void prefetch(std::size_t s) const {
            for (const double* c : column) detail::prefetch(c + s);
        }
    };
    MotionColumns motion_columns() const {
        return {{t.data(), x.data(), y.data(), z.data(), vx.data(), vy.data(), vz.data(), radius.data()}};
    }
    // Starts loading a ball's motion and radius.
    void prefetch_motion(std::size_t s) const { motion_columns().prefetch(s); }
    void set_position(std::size_t s, Vec3 p) { x[s] = p.x; y[s] = p.y; z[s] = p.z; }
    void set_velocity(std::size_t s, Vec3 v) { vx[s] = v.x; vy[s] = v.y; vz[s] = v.z; }
    Vec3 still_at(std::size_t s) const { return {still_x[s], still_y[s], still_z[s]}; }
    // The ball has been seen at p at time T, and is still from there.
    void hold_still(std::size_t s, Vec3 p, double T) {
        still_x[s] = p.x; still_y[s] = p.y; still_z[s] = p.z;
        still_since[s] = T;
    }
    // State at world time T. advance() stores exactly these values, which keeps predictions and
    // the processing of the predicted event bit-consistent.
    Vec3 position_at(std::size_t s, double T) const { return position_at(s, T, acceleration(s)); }
    Vec3 velocity_at(std::size_t s, double T) const { return velocity_at(s, T, acceleration(s)); }
    // The same with the ball's acceleration `a` given by a caller that knows it.
    Vec3 position_at(std::size_t s, double T, Vec3 a) const {
        const double tau = T - t[s];
        return {x[s] + (vx[s] + 0.5 * a.x * tau) * tau, y[s] + (vy[s] + 0.5 * a.y * tau) * tau,
                z[s] + (vz[s] + 0.5 * a.z * tau) * tau};
    }
    Vec3 velocity_at(std::size_t s, double T, Vec3 a) const {
        const double tau = T - t[s];
        return {vx[s] + a.x * tau, vy[s] + a.y * tau, vz[s] + a.z * tau};
    }
    void advance(std::size_t s, double T) {
        if (t[s] == T) return;
        const Vec3 p = position_at(s, T), v = velocity_at(s, T);
        set_position(s, p);
        set_velocity(s, v);
        set_time(s, T);
    }
    // A ball's event counter and local time, as another region's event reads them while the
    // ball's own region may change them (a partner more than a cell away: region_loop.cpp):
    // changed and read atomically, the time before the counter.
    std::uint64_t counter_now(std::size_t s) const {
        return std::atomic_ref<const std::uint64_t>(counter[s]).load(std::memory_order_acquire);
    }
    double time_now(std::size_t s) const { return std::atomic_ref<const double>(t[s]).load(std::memory_order_relaxed); }
    void set_counter(std::size_t s, std::uint64_t value) {
        std::atomic_ref<std::uint64_t>(counter[s]).store(value, std::memory_order_release);
    }
    void bump(std::size_t s) { set_counter(s, counter[s] + 1); }  // a new trajectory
    void set_time(std::size_t s, double T) { std::atomic_ref<double>(t[s]).store(T, std::memory_order_relaxed); }
    // advance() for an awake ball. A sleeping ball stands still and keeps the time it fell asleep
    // as its t (what waking it by a moving ball below waits on, SleepRules::wake_time()); waking
    // it advances it first.
    void advance_awake(std::size_t s, double T) {
        if (!asleep(s)) advance(s, T);
    }
    // The view of a ball at its own time (after a change between steps has brought it there).
    void show(std::size_t s) {
        view_x[s] = x[s]; view_y[s] = y[s]; view_z[s] = z[s];
        view_vx[s] = vx[s]; view_vy[s] = vy[s]; view_vz[s] = vz[s];
        view_speeds.reset();
    }
    // The sum of |view_vx| + |view_vy| + |view_vz| over the balls: in slot order within each
    // block of Parallel::kBlock slots (view_speeds_of()), the blocks' sums added in block order.
    // Kept from the last showing of every ball until a view or a slot changes (show(), push(),
    // restore() and each change of every column).
    std::optional<double> view_speeds;
    // `sum` plus the speeds of the slots [begin, end), in order.
    double view_speeds_of(std::size_t begin, std::size_t end, double sum = 0.0) const {
        for (std::size_t s = begin; s < end; ++s)
            sum += std::abs(view_vx[s]) + std::abs(view_vy[s]) + std::abs(view_vz[s]);
        return sum;
    }
private:
    template <class Self>
    static auto double_columns_of(Self& b) {
        return std::array{&b.x, &b.y, &b.z, &b.vx, &b.vy, &b.vz, &b.t, &b.radius, &b.inv_mass, &b.quiet_since,
                          &b.still_x, &b.still_y, &b.still_z, &b.still_since};
    }

public:
    // The per-ball columns of doubles, x … inv_mass, quiet_since, still_* (in the snapshot's order).
    auto double_columns() { return double_columns_of(*this); }
    auto double_columns() const { return double_columns_of(*this); }
    template <class Self>
    static auto view_columns_of(Self& b) {
        return std::array{&b.view_x, &b.view_y, &b.view_z, &b.view_vx, &b.view_vy, &b.view_vz};
    }
    auto view_columns() { return view_columns_of(*this); }
    auto view_columns() const { return view_columns_of(*this); }
    // fn(column) for each per-ball column: the double columns, the view, counter, rest,
    // quiet_events, jam, id, user.
    template <class Fn>
    void for_each_column(Fn&& fn) {
        view_speeds.reset();
        for (auto* v : double_columns()) fn(*v);
        for (auto* v : view_columns()) fn(*v);
        fn(counter);
        fn(rest);
        fn(quiet_events);
        fn(jam);
        fn(id);
        fn(user);
    }
    // Resting on nothing, with `quiet_events` slow events behind it (sleep.cpp).
    void push(const BallDef& def, double time, BallId handle, std::uint32_t quiet_events);
    void reserve(std::size_t balls);
    void move(std::size_t from, std::size_t to);
    void pop();
    // Slot s takes the ball of order[s], a column at a time through `scratch` (at least one
    // 8-byte word per ball, allocated by the caller: this allocates nothing, so it cannot fail
    // half-way).
    void permute(const std::vector<std::uint32_t>& order, std::vector<std::uint64_t>& scratch, Parallel& parallel);
    std::size_t bytes_per_ball() const;
    // Snapshots: every ball's state, handle and value (not the table of rests, nor the view,
    // which the world shows once whole). restore() reads `count` balls, each checked: a finite
    // state within kMaxMagnitude, a radius in (0, max_radius], a positive inverse mass, a rest
    // among the first `rest_count` entries, at most `most_jammed` collisions in a jam.
    void save(SnapshotWriter& out) const;
    void restore(SnapshotReader& in, std::size_t count, double max_radius, std::size_t rest_count,
                 std::uint32_t most_jammed);
};

}  // namespace ballistic::detail
