// Ballistic — a hint to start loading a cache line.
#pragma once

namespace ballistic::detail {

// Starts loading the cache line that holds `address`. GCC takes a function whose only statements
// are prefetches for one without effects, and drops the calls to it. The empty volatile asm is an
// effect, so the calls stay.
inline void prefetch(const void* address) {
    __builtin_prefetch(address);
    asm volatile("");
}

}  // namespace ballistic::detail
