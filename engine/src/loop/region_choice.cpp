// Ballistic — whether the regions run, by measurement (region_choice.hpp).
#include "loop/region_choice.hpp"

#include <algorithm>

namespace ballistic::detail {

void RegionChoice::measured(std::uint64_t events, double seconds) {
    events_ += events;
    seconds_ += std::max(seconds, 0.0);
    if (events_ >= kWindow) end_window();
}

void RegionChoice::end_window() {
    const double cost = seconds_ / static_cast<double>(events_);
    events_ = 0;
    seconds_ = 0.0;
    switch (phase_) {
    case Phase::Warm:  // a world's first steps touch its memory for the first time: not timed
        phase_ = Phase::Chosen;
        return;
    case Phase::Chosen:
        before_ = cost;
        if (until_look_ == 0 || --until_look_ == 0 || cost > kSlower * decided_) {
            phase_ = Phase::Look;
            regions_ = !regions_;
        }
        return;
    case Phase::Look:
        look_ = cost;
        phase_ = Phase::Back;
        regions_ = !regions_;
        return;
    case Phase::Back: {  // the way looked at against the windows either side, taken at their mean
        const double chosen = 0.5 * (before_ + cost);
        const bool switch_ways = look_ < kGain * chosen;
        look_every_ = switch_ways ? kFirstLook : std::min(2 * look_every_, kLongestLook);
        if (switch_ways) regions_ = !regions_;
        decided_ = switch_ways ? look_ : chosen;
        phase_ = Phase::Chosen;
        until_look_ = look_every_;
        return;
    }
    }
}

}  // namespace ballistic::detail
