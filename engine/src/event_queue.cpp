// Ballistic — the calendar queue's bucket management (event_queue.hpp).
#include "event_queue.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace ballistic::detail {

void EventQueue::build(const std::vector<Pending>& events) {
    const std::size_t n = events.size();
    key_.resize(n);
    where_.resize(n);
    next_.resize(n);
    prev_.resize(n);
    front_.clear();
    head_.assign(kFirstBucket, -1);
    // No year yet: every finite entry goes to the overflow, which new_year() then spreads.
    origin_ = -std::numeric_limits<double>::infinity();
    inv_width_ = 1.0;
    current_ = -1;
    year_end_ = 0;
    mask_ = 0;
    in_ring_ = 0;
    for (std::size_t s = n; s-- > 0;) {
        const auto slot = static_cast<std::uint32_t>(s);
        insert(slot, {events[s].time, slot, events[s].other << 3 | static_cast<std::uint32_t>(events[s].kind)});
    }
    new_year();
}

void EventQueue::advance() {
    while (front_.empty()) {
        if (in_ring_ == 0 && !new_year()) return;
        pull();
    }
}

void EventQueue::pull() {
    ++current_;
    std::int32_t& head = head_[static_cast<std::size_t>(kFirstBucket + (current_ & mask_))];
    for (std::int32_t s = head; s >= 0;) {
        const std::int32_t next = next_[static_cast<std::size_t>(s)];
        --in_ring_;
        push_front(static_cast<std::uint32_t>(s));
        s = next;
    }
    head = -1;
}

bool EventQueue::new_year() {
    // Called with the ring empty: every finite entry outside the front is in the overflow, later
    // than everything in the front.
    frontier_.clear();
    times_.clear();
    for (std::int32_t s = head_[kOverflowList]; s >= 0; s = next_[static_cast<std::size_t>(s)]) {
        frontier_.push_back(static_cast<std::uint32_t>(s));
        times_.push_back(key_[static_cast<std::size_t>(s)].time);
    }
    const std::size_t n = times_.size();
    if (n == 0) return false;
    const auto [lowest, highest] = std::minmax_element(times_.begin(), times_.end());
    const double first = *lowest, last = *highest;
    // Width: kPerBucket mean spacings of the earliest eighth of the entries (at least kPerBucket
    // of them), the part of the year that will be processed first.
    const std::size_t k = std::min(n - 1, std::max(kPerBucket, n / 8));
    double width = 0.0;
    if (k > 0) {
        std::nth_element(times_.begin(), times_.begin() + static_cast<std::ptrdiff_t>(k), times_.end());
        width = (times_[k] - first) / static_cast<double>(k) * static_cast<double>(kPerBucket);
        if (!(width > 0.0)) width = (last - first) / static_cast<double>(n) * static_cast<double>(kPerBucket);
    }
    if (!(width > 0.0 && std::isfinite(width) && std::isfinite(1.0 / width))) width = 1.0;

    const std::size_t buckets = std::bit_ceil(std::max<std::size_t>(16, 4 * n / kPerBucket));
    origin_ = first;
    inv_width_ = 1.0 / width;
    current_ = -1;
    year_end_ = static_cast<std::int64_t>(buckets);
    mask_ = static_cast<std::int64_t>(buckets) - 1;
    head_.resize(kFirstBucket + buckets);
    std::fill(head_.begin() + kOverflowList, head_.end(), -1);
    for (const std::uint32_t s : frontier_) insert(s, key_[s]);
    return true;
}

void EventQueue::smallest(std::size_t count, std::vector<Queued>& out) {
    out.clear();
    if (key_.empty()) return;
    auto queued = [](const Entry& e) {
        return Queued{e.slot, Pending{e.time, 0, e.other_kind >> 3, static_cast<Kind>(e.other_kind & 7u)}};
    };
    if (front_.empty()) advance();
    if (front_.empty()) {  // no finite event anywhere
        out.push_back(queued(key_[static_cast<std::size_t>(head_[kNeverList])]));
        return;
    }
    while (front_.size() < count && in_ring_ > 0) pull();
    // Best-first walk of the front heap, O(count log count).
    frontier_.assign(1, 0);  // heap indices, itself a min-heap
    auto later = [&](std::uint32_t x, std::uint32_t y) { return less(front_[y], front_[x]); };
    while (!frontier_.empty() && out.size() < count) {
        std::pop_heap(frontier_.begin(), frontier_.end(), later);
        const std::uint32_t i = frontier_.back();
        frontier_.pop_back();
        out.push_back(queued(front_[i]));
        for (std::uint32_t child = 2 * i + 1; child <= 2 * i + 2 && child < front_.size(); ++child) {
            frontier_.push_back(child);
            std::push_heap(frontier_.begin(), frontier_.end(), later);
        }
    }
}

}  // namespace ballistic::detail
