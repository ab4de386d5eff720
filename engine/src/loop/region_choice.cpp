// Ballistic — whether the regions run, by measurement (region_choice.hpp).
#include "loop/region_choice.hpp"

#include <algorithm>

namespace ballistic::detail {

void RegionChoice::measured(std::uint64_t events, double seconds) {
    if (settle_ > 0) {
        // The world's first steps, or the data moving to the cores of the other way; but a step
        // as long as a window after a switch holds its own settling, a small part of it.
        if (warming_ || events < kWindow) {
            settle_ -= std::min(settle_, events);
            warming_ = warming_ && settle_ > 0;
            return;
        }
        settle_ = 0;
    }
    events_ += events;
    seconds_ += std::max(seconds, 0.0);
    if (events_ >= (phase_ == Phase::Look ? kLook : kWindow)) end_window();
}

void RegionChoice::switch_ways() {
    regions_ = !regions_;
    settle_ = kSettle;
}

void RegionChoice::end_window() {
    const double cost = seconds_ / static_cast<double>(events_);
    events_ = 0;
    seconds_ = 0.0;
    switch (phase_) {
    case Phase::Chosen:
        before_ = cost;
        slow_ = cost > kSlower * decided_ ? slow_ + 1 : 0;
        if (until_look_ == 0 || --until_look_ == 0 || slow_ == 2) {
            phase_ = Phase::Look;
            switch_ways();
        }
        return;
    case Phase::Look:
        look_ = cost;
        phase_ = Phase::Back;
        switch_ways();
        return;
    case Phase::Back: {  // the way looked at against the windows either side
        const double low = std::min(before_, cost), high = std::max(before_, cost);
        const double chosen = high > kSlower * low ? low : 0.5 * (low + high);
        const bool look_wins = look_ < kGain * chosen;
        look_every_ = look_wins ? kFirstLook : std::min(2 * look_every_, kLongestLook);
        if (look_wins) switch_ways();
        decided_ = look_wins ? look_ : chosen;
        phase_ = Phase::Chosen;
        until_look_ = look_every_;
        slow_ = 0;
        return;
    }
    }
}

}  // namespace ballistic::detail
