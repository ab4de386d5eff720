// Ballistic — the events processed in a run, in the serial loop's order (processed.hpp).
#include "processed.hpp"

#include <algorithm>
#include <queue>
#include <utility>

namespace ballistic::detail {

void serial_order(std::vector<Processed>& events) {
    auto by_key = [](const Processed& a, const Processed& b) { return a.key < b.key; };
    std::stable_sort(events.begin(), events.end(), by_key);
    std::vector<std::pair<std::uint64_t, std::size_t>> ids;  // id, index in the instant
    std::vector<std::size_t> first_child, children, order;
    std::vector<Processed> replayed;
    for (std::size_t begin = 0; begin < events.size();) {
        std::size_t end = begin;
        bool linked = false;
        while (end < events.size() && events[end].key.time == events[begin].key.time) linked |= events[end++].parent != kNoParent;
        if (!linked) {
            begin = end;
            continue;
        }
        // The instant's events, each available once its parent is processed; the earliest key of
        // those available first (two of one key, a ball meeting a plane again at that instant,
        // are never available together: the second is created by the first).
        const std::size_t m = end - begin;
        ids.clear();
        for (std::size_t k = 0; k < m; ++k) ids.emplace_back(events[begin + k].id, k);
        std::sort(ids.begin(), ids.end());
        auto index_of = [&](std::uint64_t id) {
            const auto it = std::lower_bound(ids.begin(), ids.end(), std::pair{id, std::size_t{0}});
            return it != ids.end() && it->first == id ? it->second : m;
        };
        first_child.assign(m + 2, 0);
        std::vector<std::size_t> parent_of(m);
        for (std::size_t k = 0; k < m; ++k) {
            const std::uint64_t p = events[begin + k].parent;
            parent_of[k] = p == kNoParent ? m : index_of(p);
            ++first_child[parent_of[k] + 1];
        }
        for (std::size_t k = 0; k <= m; ++k) first_child[k + 1] += first_child[k];
        children.assign(m, 0);
        {
            std::vector<std::size_t> at(first_child.begin(), first_child.end() - 1);
            for (std::size_t k = 0; k < m; ++k) children[at[parent_of[k]]++] = k;
        }
        auto later = [&](std::size_t a, std::size_t b) { return events[begin + b].key < events[begin + a].key; };
        std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> available(later);
        for (std::size_t c = first_child[m]; c < first_child[m + 1]; ++c) available.push(children[c]);  // roots
        replayed.clear();
        while (!available.empty()) {
            const std::size_t k = available.top();
            available.pop();
            replayed.push_back(events[begin + k]);
            for (std::size_t c = first_child[k]; c < first_child[k + 1]; ++c) available.push(children[c]);
        }
        std::copy(replayed.begin(), replayed.end(), events.begin() + static_cast<std::ptrdiff_t>(begin));
        begin = end;
    }
}

}  // namespace ballistic::detail
