// Ballistic — the calendar queue's bucket management (event_queue.hpp).
#include "events/event_queue.hpp"

#include "base/prefetch.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace ballistic::detail {

void EventQueue::build(const std::vector<Pending>& events, const std::vector<std::uint32_t>& part,
                       std::size_t parts, Parallel& parallel) {
    const std::size_t n = events.size();
    nodes_.assign(n, Node{});
    if (!part.empty()) {
        parallel.for_blocks(n, [&](std::size_t begin, std::size_t end) {
            for (std::size_t s = begin; s < end; ++s) nodes_[s].part = part[s];
        });
    }
    calendars_.assign(std::max<std::size_t>(parts, 1), Calendar{});
    parallel.for_each(calendars_.size(), [&](std::size_t p) {
        Calendar& c = calendars_[p];
        // No year yet: every finite entry goes to the overflow, which new_year() then spreads.
        c.head.assign(kFirstBucket, -1);
        c.origin = -std::numeric_limits<double>::infinity();
        for (std::size_t s = n; s-- > 0;) {
            if (nodes_[s].part != p) continue;
            const auto slot = static_cast<std::uint32_t>(s);
            insert(c, slot, entry(slot, events[s]));
        }
        new_year(c);
    });
}

std::uint32_t EventQueue::top() {
    const Entry* best = nullptr;
    std::int32_t idle = -1;  // a slot without an event, when no part has one
    for (std::size_t part = 0; part < calendars_.size(); ++part) {
        warm(part);
        Calendar& c = calendars_[part];
        if (c.front.empty()) advance(c);
        if (!c.front.empty()) {
            if (!best || less(c.front.front(), *best)) best = &c.front.front();
        } else if (c.head[kNeverList] >= 0) {
            idle = c.head[kNeverList];
        }
    }
    return best ? best->slot : static_cast<std::uint32_t>(idle);
}

void EventQueue::advance(Calendar& c) {
    while (c.front.empty()) {
        if (c.in_ring == 0 && !new_year(c)) return;
        pull(c);
    }
}

void EventQueue::pull(Calendar& c) {
    ++c.current;
    std::int32_t& head = c.head[static_cast<std::size_t>(kFirstBucket + (c.current & c.mask))];
    for (std::int32_t s = head; s >= 0;) {
        const std::int32_t next = nodes_[static_cast<std::size_t>(s)].next;
        --c.in_ring;
        push_front(c, static_cast<std::uint32_t>(s));
        s = next;
    }
    head = -1;
}

void EventQueue::warm(std::size_t part) {
    Calendar& c = calendars_[part];
    if (c.warm >= 0) {
        // A node pulled into the front meanwhile links heap positions, not a list: stop there.
        const Node& node = nodes_[static_cast<std::size_t>(c.warm)];
        c.warm = node.where >= kFirstBucket ? node.next : -1;
    } else {
        // The next bucket not yet walked, unless the walk is far enough ahead.
        const std::int64_t b = std::max(c.warm_bucket, c.current) + 1;
        if (b >= std::min(c.year_end, c.current + 1 + kWarmBuckets)) return;
        c.warm_bucket = b;
        c.warm = c.head[static_cast<std::size_t>(kFirstBucket + (b & c.mask))];
    }
    if (c.warm >= 0) prefetch(&nodes_[static_cast<std::size_t>(c.warm)]);
}

bool EventQueue::new_year(Calendar& c) {
    // Called with the ring empty: every finite entry outside the front is in the overflow, later
    // than everything in the front.
    c.spread.clear();
    c.times.clear();
    auto take = [&](std::uint32_t s) {
        c.spread.push_back(s);
        c.times.push_back(nodes_[s].key.time);
    };
    if (c.overflow * kScanShare >= nodes_.size()) {
        // Most of a part's entries: all the nodes in slot order, which streams them, where the
        // overflow's list is one dependent cache miss per entry. Another part's nodes may change
        // meanwhile: only their part is read.
        const auto part = static_cast<std::uint32_t>(&c - calendars_.data());
        for (std::uint32_t s = 0; s < nodes_.size(); ++s)
            if (part_of_now(s) == part && nodes_[s].where == kOverflowList) take(s);
    } else {
        for (std::int32_t s = c.head[kOverflowList]; s >= 0; s = nodes_[static_cast<std::size_t>(s)].next)
            take(static_cast<std::uint32_t>(s));
    }
    const std::size_t n = c.times.size();
    if (n == 0) return false;
    const auto [lowest, highest] = std::minmax_element(c.times.begin(), c.times.end());
    const double first = *lowest, last = *highest;
    // Width: kPerBucket mean spacings of the earliest eighth of the entries (at least kPerBucket
    // of them), the part of the year that will be processed first.
    const std::size_t k = std::min(n - 1, std::max(kPerBucket, n / 8));
    double width = 0.0;
    if (k > 0) {
        std::nth_element(c.times.begin(), c.times.begin() + static_cast<std::ptrdiff_t>(k), c.times.end());
        width = (c.times[k] - first) / static_cast<double>(k) * static_cast<double>(kPerBucket);
        if (!(width > 0.0)) width = (last - first) / static_cast<double>(n) * static_cast<double>(kPerBucket);
    }
    if (!(width > 0.0 && std::isfinite(width) && std::isfinite(1.0 / width))) width = 1.0;

    const std::size_t buckets = std::bit_ceil(std::max<std::size_t>(16, 4 * n / kPerBucket));
    c.origin = first;
    c.inv_width = 1.0 / width;
    c.current = -1;
    c.warm = -1;
    c.warm_bucket = -1;
    c.year_end = static_cast<std::int64_t>(buckets);
    c.mask = static_cast<std::int64_t>(buckets) - 1;
    c.head.resize(kFirstBucket + buckets);
    std::fill(c.head.begin() + kOverflowList, c.head.end(), -1);
    c.overflow = 0;
    for (const std::uint32_t s : c.spread) place(c, s);
    return true;
}

}  // namespace ballistic::detail
