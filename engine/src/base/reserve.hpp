// Ballistic — room in a vector for things added one at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ballistic::detail {

// Room for `needed` elements, growing geometrically: things added one at a time cost amortised
// O(1) each, not a copy of all before them.
template <class T, class A>
void reserve_for(std::vector<T, A>& v, std::size_t needed) {
    if (needed > v.capacity()) v.reserve(std::max(needed, 2 * v.capacity()));
}

}  // namespace ballistic::detail
