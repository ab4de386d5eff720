// Ballistic — the ball store (balls.hpp).
#include "space/balls.hpp"

#include "base/byte_stream.hpp"
#include "base/format.hpp"
#include "base/validate.hpp"
#include "space/statics.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <type_traits>

namespace ballistic {

void detail::RestTable::reset(Vec3 gravity) {
    size_ = 0;  // the segments stay, for the entries to come
    index_.clear();
    indexed_ = 0;
    intern({kNoSupport, kNoSupport, kNoSupport}, false, gravity);
}

std::uint32_t detail::RestTable::intern(const Supports& supports, bool asleep, Vec3 acceleration) {
    const Key key = key_of(supports, asleep);
    if (const auto found = index_.find(key); found != index_.end()) return found->second;
    const std::lock_guard lock(adding_);
    if (const auto found = index_.find(key); found != index_.end()) return found->second;
    // An entry left unindexed (its indexing ran out of memory) is indexed before any other is
    // added: no key ever has two entries (a snapshot restores each entry at its index).
    if (indexed_ < size_) {
        const Rest& left = (*this)[static_cast<std::uint32_t>(indexed_)];
        index_.emplace(key_of(left.supports, left.asleep), static_cast<std::uint32_t>(indexed_));
        ++indexed_;
        if (const auto found = index_.find(key); found != index_.end()) return found->second;
    }
    const std::uint32_t k = append({supports, asleep, acceleration});
    index_.emplace(key, k);  // published only now that the entry is complete
    ++indexed_;
    return k;
}

std::uint32_t detail::RestTable::append(const Rest& rest) {
    const std::size_t s = segment_of(size_);
    if (s == kSegments) throw std::bad_alloc();  // 2^31 sets of supports: never, with 2^29 balls at most
    if (!segments_[s]) segments_[s] = std::make_unique<Rest[]>(length_of(s));
    segments_[s][size_ - first_of(s)] = rest;
    return static_cast<std::uint32_t>(size_++);
}

std::size_t detail::RestTable::Hash::operator()(const Key& s) const {
    std::uint64_t h = 0;
    for (const std::int32_t k : s) h = (h ^ static_cast<std::uint32_t>(k)) * 0x100000001b3ull;
    return static_cast<std::size_t>(h ^ h >> 29);
}

std::size_t detail::RestTable::bytes() const {
    // An index node holds the key, the value and two links besides.
    std::size_t held = 0;
    for (std::size_t s = 0; s < kSegments; ++s)
        if (segments_[s]) held += length_of(s);
    return held * sizeof(Rest) + size_ * (sizeof(Key) + sizeof(std::uint32_t) + 2 * sizeof(void*));
}

void detail::Balls::push(const BallDef& def, double time, BallId handle, std::uint32_t quiet) {
    x.push_back(def.position.x); y.push_back(def.position.y); z.push_back(def.position.z);
    vx.push_back(def.velocity.x); vy.push_back(def.velocity.y); vz.push_back(def.velocity.z);
    t.push_back(time);
    radius.push_back(def.radius);
    inv_mass.push_back(1.0 / def.mass);
    counter.push_back(0);
    rest.push_back(RestTable::kNone);
    quiet_since.push_back(time);
    still_x.push_back(def.position.x); still_y.push_back(def.position.y); still_z.push_back(def.position.z);
    still_since.push_back(time);
    view_x.push_back(def.position.x); view_y.push_back(def.position.y); view_z.push_back(def.position.z);
    view_vx.push_back(def.velocity.x); view_vy.push_back(def.velocity.y); view_vz.push_back(def.velocity.z);
    quiet_events.push_back(quiet);
    jam.push_back(0);
    id.push_back(handle);
    user.push_back(def.user_data);
    view_speeds.reset();
}

void detail::Balls::reserve(std::size_t balls) {
    if (balls <= x.capacity()) return;
    balls = std::max(balls, 2 * x.capacity());  // geometric, for callers adding one ball at a time
    for_each_column([&](auto& column) { column.reserve(balls); });
}

void detail::Balls::move(std::size_t from, std::size_t to) {
    for_each_column([&](auto& column) { column[to] = column[from]; });
}

void detail::Balls::pop() {
    for_each_column([](auto& column) { column.pop_back(); });
}

std::size_t detail::Balls::bytes_per_ball() const {
    return (double_columns().size() + view_columns().size()) * sizeof(double) + 2 * sizeof(std::uint64_t) + 3 * sizeof(std::uint32_t) + sizeof(BallId);
}

void detail::Balls::permute(const std::vector<std::uint32_t>& order, std::vector<std::uint64_t>& scratch,
                            Parallel& parallel) {
    for_each_column([&](auto& column) {
        using T = typename std::decay_t<decltype(column)>::value_type;
        static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(std::uint64_t));
        auto* old = reinterpret_cast<unsigned char*>(scratch.data());
        std::memcpy(old, column.data(), column.size() * sizeof(T));
        parallel.for_blocks(order.size(), [&](std::size_t begin, std::size_t end) {
            for (std::size_t s = begin; s < end; ++s) std::memcpy(&column[s], old + std::size_t{order[s]} * sizeof(T), sizeof(T));
        });
    });
}

}  // namespace ballistic

namespace ballistic::detail {

void RestTable::save(SnapshotWriter& out) const {
    out.put(static_cast<std::uint64_t>(size_));
    for (std::uint32_t k = 0; k < size_; ++k) {
        const Rest& r = (*this)[k];
        for (const std::int32_t s : r.supports) out.put(s);
        out.put(static_cast<std::uint8_t>(r.asleep));
        out.put(r.acceleration);
    }
}

std::size_t RestTable::restore(SnapshotReader& in, const StaticCounts& statics) {
    // Read one at a time: a count larger than the file costs nothing before the file ends.
    const double support_sets = 2.0 * std::pow(double(statics.planes) + 6.0 * double(statics.blocks) + 1.0, 3.0);
    const std::size_t rests = in.count("rest count", static_cast<std::uint64_t>(std::min(support_sets, 4294967295.0)));
    if (rests == 0) bad_snapshot("no rest table");
    for (std::size_t k = 0; k < rests; ++k) {
        Supports sup;
        for (std::int32_t& s : sup) {
            s = in.get<std::int32_t>("supports");
            const bool known = s == kNoSupport || (s >= 0 && static_cast<std::size_t>(s) < statics.planes) ||
                               (is_face(s) && face_block(s) < statics.blocks);
            if (!known)
                bad_snapshot("rest " + std::to_string(k) + " names support " + std::to_string(s) + " of " +
                             std::to_string(statics.planes) + " planes and " + std::to_string(statics.blocks) + " blocks");
        }
        const bool asleep = in.get<std::uint8_t>("asleep") != 0;
        const Vec3 a = in.finite_vec("rest acceleration");
        if (asleep && a != Vec3{}) bad_snapshot("rest " + std::to_string(k) + " is asleep with acceleration " + show(a));
        const std::uint32_t index = k == 0 ? kNone : intern(sup, asleep, a);
        const Rest& kept = (*this)[index];
        if (index != k || kept.supports != sup || kept.asleep != asleep)
            bad_snapshot("rest " + std::to_string(k) + " repeats an earlier one or is not the first entry's 'on nothing'");
    }
    return rests;
}

void Balls::save(SnapshotWriter& out) const {
    for (const auto* column : double_columns()) out.put_column(*column);
    out.put_column(counter);
    out.put_column(rest);
    out.put_column(quiet_events);
    out.put_column(jam);
    for (const BallId handle : id) out.put(handle.value);
    out.put_column(user);
}

void Balls::restore(SnapshotReader& in, std::size_t count, double max_radius, std::size_t rest_count,
                    std::uint32_t most_jammed) {
    for (auto* column : double_columns()) {
        in.get_column(*column, count, "ball state");
        for (const double v : *column)
            if (!std::isfinite(v) || std::abs(v) > kMaxMagnitude) bad_snapshot("a ball's state holds " + detail::show(v));
    }
    for (std::size_t s = 0; s < count; ++s)
        if (!(radius[s] > 0.0 && inv_mass[s] > 0.0 && radius[s] <= max_radius))
            bad_snapshot("ball slot " + std::to_string(s) + " has radius " + detail::show(radius[s]) + " and inverse mass " +
                         detail::show(inv_mass[s]));
    in.get_column(counter, count, "event counters");
    in.get_column(rest, count, "rests");
    for (const std::uint32_t r : rest)
        if (r >= rest_count) bad_snapshot("a ball rests on entry " + std::to_string(r) + " of " + std::to_string(rest_count));
    in.get_column(quiet_events, count, "quiet events");
    in.get_column(jam, count, "collisions in a jam");
    for (const std::uint32_t n : jam)
        if (n > most_jammed) bad_snapshot("a ball counts " + std::to_string(n) + " collisions in a jam");
    const std::vector<std::uint64_t> handles = in.get_column<std::uint64_t>(count, "handles");
    id.resize(count);
    for (std::size_t s = 0; s < count; ++s) id[s] = BallId{handles[s]};
    in.get_column(user, count, "user data");
    for (auto* column : view_columns()) column->resize(count);  // shown once the world is whole
    view_speeds.reset();
}

}  // namespace ballistic::detail
