// Ballistic — whether the regions run, by measurement (WorldDef::regions_when_faster). The regions
// give the serial loop's result bit for bit, so the choice is one of speed alone, and only the
// machine can tell: a region's exchanges with its neighbours cost a round trip between cores, from
// 0.1 to 0.6 µs on the VMs measured, and small or dense worlds pay it more often.
//
// The world times its steps whole, in windows of kWindow events or more, each step one way: the
// way the events go also decides where the balls' data lies for the rest of the step. What is not
// the way's own cost is not timed: the world's first kWindow events, whose steps touch its memory
// for the first time (two to five times a later step's time per event in the box of 10⁵ balls),
// and the first kSettle events after a switch, while the balls' data moves to the cores of the
// other way (up to 1.6 times a later step's in the box of 10⁴), unless they come in a step of a
// window or more (a world of 10⁶ balls), which is timed whole.
//
// A window the other way (a look), shorter (kLook events or more: it costs the slower way's extra
// time), between two windows of the way chosen decides. The look wins
// when it took less than kGain times the mean time per event of the two either side, so that a
// machine or a world whose speed drifts favours neither way; or of the faster of the two, when
// the other took kSlower times as long (a re-sort of the balls takes a window of the box of 10⁵
// to four times its time). A near tie or a noisy window keeps the way chosen. After a look that
// changes the way, the next comes after kFirstLook windows; after one that keeps it, after twice
// as many as the last time, at most kLongestLook; and at once when two windows of the way chosen in
// a row took kSlower times as long per event as that way did when it was chosen. So a pile that
// forms or settles, or a neighbour on the machine that comes and goes, is found, and while the
// world and the machine stay as they are one window in 131 goes the other way.
//
// Invariants: a choice never changes what is computed; `regions()` is the way of the next window.
#pragma once

#include <cstdint>

namespace ballistic::detail {

class RegionChoice {
public:
    static constexpr std::uint64_t kWindow = 32768, kLook = kWindow / 4, kSettle = kWindow / 4;
    static constexpr std::uint32_t kFirstLook = 16, kLongestLook = 128;
    static constexpr double kGain = 0.9, kSlower = 1.5;

    bool regions() const { return regions_; }
    // Events processed the way regions() says, and the seconds they took.
    void measured(std::uint64_t events, double seconds);

private:
    void end_window();
    void switch_ways();

    enum class Phase { Chosen, Look, Back };  // the window under way: of the way chosen, a look, the one after it
    Phase phase_ = Phase::Chosen;
    bool regions_ = true;
    std::uint64_t settle_ = kWindow;  // events still to come before the next window
    bool warming_ = true;             // the world's first window
    std::uint64_t events_ = 0;        // of the window under way
    double seconds_ = 0.0;
    // Seconds per event: the window before a look, the look, the way chosen when it was chosen.
    double before_ = 0.0, look_ = 0.0, decided_ = 0.0;
    std::uint32_t look_every_ = kFirstLook;  // windows of the way chosen between looks
    std::uint32_t until_look_ = 0;
    std::uint32_t slow_ = 0;  // windows in a row of the way chosen, kSlower times as slow
};

}  // namespace ballistic::detail
