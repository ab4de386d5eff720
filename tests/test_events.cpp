// A ball's events, on their own: the measurements, the predictor, the response, the serial event
// loop, and the sleep decisions between them, each against its invariants and closed forms; and
// the choice between the regions and the serial loop, on given timings.
#include "base/byte_stream.hpp"
#include "events/measurements.hpp"
#include "events/predictor.hpp"
#include "events/response.hpp"
#include "loop/event_loop.hpp"
#include "loop/region_choice.hpp"
#include "loop/region_shares.hpp"
#include "rules/sleep_rules.hpp"
#include "sleep/sleep.hpp"
#include "space/balls.hpp"
#include "space/cells.hpp"
#include "space/statics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

using namespace ballistic;
using namespace ballistic::detail;

TEST(Measurements, CountsRecordsUpToTheLimitAndResets) {
    Measurements m;
    m.plane_counters.resize(2);
    m.cylinder_counters.resize(1);
    CollisionEvent ball_ball{1.0, EventKind::BallBall, {}, {}, 0, {}, {}, 2.0};
    CollisionEvent plane{1.5, EventKind::BallPlane, {}, {}, 1, {}, {}, 3.0};
    m.begin_step();
    m.room_for(3, 2);
    m.count(ball_ball, 0.25, 1e-12, 2);
    m.count(plane, 0.0, 0.0, 2);
    m.count(plane, 0.0, 2e-12, 2);
    m.count_crossing();
    EXPECT_EQ(m.counts.ball_ball, 1u);
    EXPECT_EQ(m.counts.ball_plane, 2u);
    EXPECT_EQ(m.counts.cell_crossings, 1u);
    EXPECT_EQ(m.plane_counters[1].hits, 2u);
    EXPECT_DOUBLE_EQ(m.plane_counters[1].impulse, 6.0);
    EXPECT_DOUBLE_EQ(m.virial, 0.25);
    EXPECT_DOUBLE_EQ(m.event_overlap, 2e-12);
    EXPECT_EQ(m.step_events.size(), 2u);  // the limit
    EXPECT_EQ(m.step_events_unrecorded, 1u);
    m.reset(7.0);
    EXPECT_EQ(m.counts.collisions(), 0u);
    EXPECT_EQ(m.lifetime_collisions(), 3u);
    EXPECT_EQ(m.plane_counters[1].hits, 0u);
    EXPECT_DOUBLE_EQ(m.window_start, 7.0);
    m.begin_step();
    EXPECT_TRUE(m.step_events.empty());
    EXPECT_EQ(m.step_events_unrecorded, 0u);
}

// A predictor, sleeping and a response over their own balls, cells (width 2, from the origin)
// and statics.
struct Predicting {
    WorldDef def;
    Balls balls;
    Cells cells;
    Statics statics;
    Column<Contact> contacts;
    SleepRules rules{def};
    Predictor predictor{def, balls, cells, statics, contacts, rules};
    Parallel parallel{1};
    Sleep sleep{def, balls, cells, statics, rules, parallel};
    Response response{def, balls, cells, statics, contacts, predictor, sleep};

    explicit Predicting(Vec3 gravity) {
        def.gravity = gravity;
        def.restitution = 0.5;
        balls.rests.reset(gravity);
        cells.configure(2.0, std::nullopt, {}, 8);
    }
    // A ball at rest is quiet at once (as World::add_balls() makes it).
    std::uint32_t add(Vec3 position, Vec3 velocity) {
        const auto slot = static_cast<std::uint32_t>(balls.size());
        const bool still = velocity == Vec3{};
        balls.push(BallDef{position, velocity, 0.5, 1.0}, 0.0, BallId{slot + 1}, still ? def.sleep_events : 0);
        cells.insert(slot, cells.key_of(position));
        contacts.resize(balls.size());
        return slot;
    }
};

TEST(Predictor, HeadOnPairMeetsAtTheClosedFormTime) {
    Predicting w({0, 0, 0});
    const std::uint32_t a = w.add({0.5, 1, 1}, {1, 0, 0}), b = w.add({3.5, 1, 1}, {-1, 0, 0});
    // Gap 3 − 1 closing at speed 2: t = 1, before a leaves its cell [0, 2) at x = 2 (t = 1.5).
    const Pending next = w.predictor.predict(a, 0.0);
    EXPECT_EQ(next.kind, Kind::BallBall);
    EXPECT_EQ(next.other, b);
    EXPECT_EQ(next.time, 1.0);
    EXPECT_EQ(w.contacts[a].event.time, 1.0);  // stored as the ball's contact, with b's counter
    EXPECT_EQ(w.contacts[a].other_counter, w.balls.counter[b]);
}

TEST(Predictor, FallingBallMeetsThePlaneOrLeavesItsCellFirst) {
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    const std::uint32_t low = w.add({1, 1.3, 1}, {0, 0, 0});
    // 0.8 above touching: 5 t² = 0.8, t = 0.4, inside its cell [0, 2).
    Pending next = w.predictor.predict(low, 0.0);
    EXPECT_EQ(next.kind, Kind::BallPlane);
    EXPECT_EQ(next.other, 0u);
    EXPECT_NEAR(next.time, 0.4, 1e-15);
    const std::uint32_t high = w.add({5, 7, 5}, {0, 0, 0});
    // Leaves cell [6, 8) through its lower face (face 2) when 5 t² = 1.
    next = w.predictor.predict(high, 0.0);
    EXPECT_EQ(next.kind, Kind::Crossing);
    EXPECT_EQ(next.other, 2u);
    EXPECT_NEAR(next.time, std::sqrt(0.2), 1e-15);
    EXPECT_EQ(w.contacts[high].event.kind, Kind::BallPlane);  // the contact has no horizon
}

TEST(Predictor, EnteringACellSeesTheLayerThatCameIntoReach) {
    Predicting w({0, 0, 0});
    const std::uint32_t a = w.add({1, 1, 1}, {1, 0, 0});
    const std::uint32_t far = w.add({5.5, 1, 1}, {0, 0, 0});  // cell 2 along x: out of a's reach
    Pending next = w.predictor.predict(a, 0.0);
    EXPECT_EQ(next.kind, Kind::Crossing);
    EXPECT_EQ(next.other, 1u);  // the upper x face, at x = 2
    EXPECT_EQ(next.time, 1.0);
    // Across it, cell 2 along x comes into reach, and with it the far ball: 1 + t = 5.5 − 1.
    const CellKey entered{1, 0, 0};
    w.cells.move(a, entered);
    next = w.predictor.predict_entering(a, 1.0, entered, 1);
    EXPECT_EQ(next.kind, Kind::Crossing);  // x = 4 at t = 3, before the impact at 3.5
    EXPECT_EQ(w.contacts[a].event.kind, Kind::BallBall);
    EXPECT_EQ(w.contacts[a].event.other, far);
    EXPECT_EQ(w.contacts[a].event.time, 3.5);
}

TEST(Response, HeadOnCollisionMatchesTheClosedFormAndUndoes) {
    Predicting w({0, 0, 0});
    const std::uint32_t a = w.add({0.5, 1, 1}, {1, 0, 0}), b = w.add({3.5, 1, 1}, {-1, 0, 0});
    const Pending event = w.predictor.predict(a, 0.0);
    w.predictor.predict(b, 0.0);
    Outcome out;
    w.response.compute(a, event, out);
    // Equal masses, e = 0.5, approach 2: each leaves at 0.5, the impulse (1 + e) u m / 2 = 1.5.
    ASSERT_TRUE(out.collided);
    EXPECT_EQ(w.balls.velocity(a), (Vec3{-0.5, 0, 0}));
    EXPECT_EQ(w.balls.velocity(b), (Vec3{0.5, 0, 0}));
    EXPECT_EQ(w.balls.t[a], 1.0);
    EXPECT_EQ(w.balls.position(a), (Vec3{1.5, 1, 1}));
    EXPECT_DOUBLE_EQ(out.event.impulse, 1.5);
    EXPECT_EQ(out.n_requeue, 2);  // both predicted afresh, for the commit to queue
    // Undone, both balls are as they were, bit for bit, counters and contacts included.
    w.response.undo(out);
    EXPECT_EQ(w.balls.velocity(a), (Vec3{1, 0, 0}));
    EXPECT_EQ(w.balls.velocity(b), (Vec3{-1, 0, 0}));
    EXPECT_EQ(w.balls.position(a), (Vec3{0.5, 1, 1}));
    EXPECT_EQ(w.balls.t[a], 0.0);
    EXPECT_EQ(w.balls.counter[a], 0u);
    EXPECT_EQ(w.contacts[a].event.time, 1.0);
}

TEST(Response, ASlowImpactOnTheFloorSettlesAndAFastOneBounces) {
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    // Falling 0.8 onto the floor: it arrives at 4 (the square root of 2 g h), bounces at e = 0.5.
    const std::uint32_t fast = w.add({1, 1.3, 1}, {});
    Outcome out;
    w.response.compute(fast, w.predictor.predict(fast, 0.0), out);
    ASSERT_TRUE(out.collided);
    EXPECT_NEAR(w.balls.velocity(fast).y, 2.0, 1e-12);
    EXPECT_NEAR(out.event.impulse, 6.0, 1e-12);  // m (1 + e) u
    EXPECT_EQ(w.balls.supports(fast)[0], kNoSupport);
    // Arriving slower than rest_speed, pressed by gravity: it rests on the floor and slides on.
    const double slow = 0.5 * w.def.rest_speed;
    const std::uint32_t resting = w.add({5, 0.5 + slow * slow / 20.0, 5}, {0.25, 0, 0});
    w.response.compute(resting, w.predictor.predict(resting, 0.0), out);
    ASSERT_TRUE(out.collided);
    EXPECT_EQ(w.balls.supports(resting)[0], 0);
    EXPECT_EQ(w.balls.acceleration(resting), (Vec3{0, 0, 0}));
    EXPECT_EQ(w.balls.velocity(resting), (Vec3{0.25, 0, 0}));
}

TEST(Response, AnImpactThatWouldLeaveTheFloorSlowerThanRestSpeedSettles) {
    // Bounced off at e u < rest_speed, a pressed ball met the floor again at once, at approaches
    // that rounding set (with e = 0 and rest_speed 10⁻¹² under g = 1000: every 10⁻⁸ time units).
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    // e = 0.5, arriving at 1.5 rest_speed: it would leave at 0.75 rest_speed.
    const double u = 1.5 * w.def.rest_speed;
    const std::uint32_t slow = w.add({1, 0.5 + u * u / 20.0, 1}, {0.25, 0, 0});
    Outcome out;
    w.response.compute(slow, w.predictor.predict(slow, 0.0), out);
    ASSERT_TRUE(out.collided);
    EXPECT_EQ(w.balls.supports(slow)[0], 0);
    EXPECT_EQ(w.balls.velocity(slow), (Vec3{0.25, 0, 0}));
    EXPECT_NEAR(out.event.impulse, u, 1e-12);  // m u: perfectly inelastic
    // e = 0: arriving at 4, it stops on the floor and rests there.
    w.def.restitution = 0.0;
    const std::uint32_t fast = w.add({5, 1.3, 5}, {});
    w.response.compute(fast, w.predictor.predict(fast, 0.0), out);
    ASSERT_TRUE(out.collided);
    EXPECT_EQ(w.balls.supports(fast)[0], 0);
    EXPECT_EQ(w.balls.velocity(fast), (Vec3{0, 0, 0}));
    EXPECT_NEAR(out.event.impulse, 4.0, 1e-12);
}

TEST(EventLoop, ProcessesInTimeOrderUpToTheEndTheBudgetOrTheFlag) {
    // Three balls falling onto a floor from different heights, elastic: each bounces for ever.
    Predicting w({0, -10, 0});
    w.def.restitution = 1.0;
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    for (const double h : {1.3, 0.9, 0.6}) w.add({1 + 4 * h, h, 1}, {});
    Measurements measurements;
    measurements.plane_counters.resize(1);
    Parallel parallel(make_serial_task_system());
    EventLoop loop(w.def, w.cells, w.response, measurements, parallel, 0.0);
    std::vector<Pending> events;
    for (std::uint32_t s = 0; s < w.balls.size(); ++s) events.push_back(w.predictor.predict(s, 0.0));
    loop.build(events, w.cells);
    // Up to t = 1: the first impacts come at sqrt(2 (h − 0.5) / g): 0.4, 0.283 and 0.141.
    measurements.begin_step();
    EXPECT_EQ(loop.run_until(1.0, 0), EventLoop::End::Reached);
    double last = 0.0;
    std::size_t impacts = 0;
    for (const CollisionEvent& e : measurements.step_events) {
        EXPECT_GE(e.time, last);
        last = e.time;
        ++impacts;
    }
    ASSERT_GE(impacts, 3u);
    EXPECT_NEAR(measurements.step_events[0].time, std::sqrt(0.02), 1e-12);
    EXPECT_EQ(loop.processed, impacts);  // no cell crossings: every ball stays in its cell
    EXPECT_LE(loop.last_processed, 1.0);
    // A budget of two events stops after two; the flag before the next.
    const std::uint64_t before = loop.processed;
    EXPECT_EQ(loop.run_until(100.0, 2), EventLoop::End::Budget);
    EXPECT_EQ(loop.processed, before + 2);
    std::atomic<bool> stop{true};
    loop.interrupt = &stop;
    EXPECT_EQ(loop.run_until(100.0, 0), EventLoop::End::Interrupted);
    EXPECT_EQ(loop.processed, before + 2);
}

TEST(Sleep, AStackFallsAsleepFromTheFloorUpAndWakes) {
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    ASSERT_TRUE(w.sleep.enabled());
    const std::uint32_t low = w.add({1, 0.5, 1}, {}), high = w.add({1, 1.5, 1}, {});
    // Alone, the upper ball cannot stand on an awake one; the lower one stands on the floor.
    EXPECT_TRUE(w.sleep.may_sleep(high, 0.0));
    EXPECT_FALSE(w.sleep.is_carried(high, 0.0));
    EXPECT_TRUE(w.sleep.is_carried(low, 0.0));
    const std::uint64_t counter = w.balls.counter[low];
    EXPECT_TRUE(w.sleep.sleep_if_carried(low, 0.0));
    EXPECT_TRUE(w.balls.asleep(low));
    EXPECT_EQ(w.balls.counter[low], counter + 1);  // predictions of it are stale
    EXPECT_TRUE(w.sleep.sleep_if_carried(high, 0.0));     // now on a sleeping ball
    // A ball off-centre on the sleeping pair cannot stand: it would slide off.
    const std::uint32_t tilted = w.add({1.6, 2.3, 1}, {});  // touching: 0.6² + 0.8² = 1
    EXPECT_FALSE(w.sleep.is_carried(tilted, 0.0));
    // Waking what touches a ball: the upper one, not the floor ball.
    const Sleep::Woken woken = w.sleep.prepare_wake_touching(tilted, 0.0);
    ASSERT_EQ(woken.size(), 1u);
    EXPECT_EQ(woken[0].first, high);
    w.sleep.commit_wake(woken, 0.0);
    EXPECT_FALSE(w.balls.asleep(high));
    EXPECT_TRUE(w.balls.asleep(low));
}

TEST(Sleep, ASupportLeavingABallTheJamPutToSleepWakesItOnceItHasSleptWakeDelay) {
    // A ball the jam put to sleep at 0 on a support that leaves downwards at speed 1 then: the
    // support's prediction holds a Wake of it at wake_delay, kept through a fresh prediction
    // after the support has left the touching gap, so the ball falls too instead of sleeping in
    // the air (the delay keeps a jam from waking and sleeping again at one instant).
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    const std::uint32_t support = w.add({1, 5, 1}, {0, -1, 0}), load = w.add({1, 6, 1}, {});
    w.sleep.sleep_now(load, 0.0);
    w.balls.jam[load] = SleepRules::kJamBudget + 1;
    const double delay = w.rules.wake_delay(0.5);
    ASSERT_GT(delay, 0.0);
    ASSERT_LT(delay, 0.1);  // the support leaves its cell [4, 6) at t + 5 t² = 1, t > 0.35
    Pending next = w.predictor.predict(support, 0.0);
    EXPECT_EQ(next.kind, Kind::Wake);
    EXPECT_EQ(next.other, load);
    EXPECT_EQ(next.time, delay);
    // Predicted afresh half-way (as after a stale event), the gap already open: the Wake stays.
    ASSERT_GT(0.5 * delay, 4 * w.rules.touch_gap(0.5));
    next = w.predictor.predict(support, 0.5 * delay);
    EXPECT_EQ(next.kind, Kind::Wake);
    EXPECT_EQ(next.time, delay);
    // So it does when every ball is predicted afresh within a step (a review of the cells'
    // width, a pause that adds balls): every other contact is forgotten, the Wake kept. Between
    // steps the Wake is forgotten too.
    w.contacts[load].event = {1.0, support, Kind::BallBall};
    w.predictor.forget_contacts(w.balls.size(), 0.5 * delay, true);
    EXPECT_EQ(w.contacts[load].event.kind, Kind::None);
    EXPECT_EQ(w.contacts[support].event.kind, Kind::Wake);
    next = w.predictor.predict(support, 0.5 * delay);
    EXPECT_EQ(next.kind, Kind::Wake);
    EXPECT_EQ(next.time, delay);
    const Column<Contact> held = w.contacts;
    w.predictor.forget_contacts(w.balls.size(), 0.5 * delay, false);
    EXPECT_NE(w.predictor.predict(support, 0.5 * delay).kind, Kind::Wake);  // asleep in the air
    w.contacts = held;
    Outcome out;
    w.response.compute(support, next, out);
    EXPECT_FALSE(w.balls.asleep(load));
    // Not jammed, a ball wakes once its support has moved away by the touching gap: here when
    // 1 τ + 5 τ² = touch_gap; jammed at a time beside which the delay rounds away, it still wakes
    // after the time it fell asleep.
    const std::uint32_t other = w.add({5, 5, 5}, {0, -1, 0}), on_other = w.add({5, 6, 5}, {});
    w.sleep.sleep_now(on_other, 0.0);
    const double opened = (std::sqrt(1.0 + 20.0 * w.rules.touch_gap(0.5)) - 1.0) / 10.0;
    next = w.predictor.predict(other, 0.0);
    EXPECT_EQ(next.kind, Kind::Wake);
    EXPECT_NEAR(next.time, opened, 1e-12 * opened + 1e-15);
    EXPECT_LT(next.time, delay);
    w.balls.t[on_other] = 1e20;
    w.balls.jam[on_other] = SleepRules::kJamBudget + 1;
    EXPECT_GT(w.rules.wake_time(w.balls, on_other, 1e20), 1e20);
}

TEST(Sleep, AJamIsACollisionAtTheSameInstantOrAfterATravelBelowRounding) {
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    const std::uint32_t s = w.add({1, 0.5, 1}, {1e-4, 0, 0});  // radius 0.5, on the floor, at 10⁻⁴
    EXPECT_TRUE(w.sleep.jammed(s, 0.0));     // the same instant
    EXPECT_TRUE(w.sleep.jammed(s, 1e-6));    // 10⁻¹⁰ travelled: below 10⁻⁹ r
    EXPECT_FALSE(w.sleep.jammed(s, 1e-3));   // 10⁻⁷ travelled
    w.sleep.sleep_now(s, 0.0);
    EXPECT_FALSE(w.sleep.jammed(s, 1e-6));   // a sleeping ball is hit at one instant only
    EXPECT_TRUE(w.sleep.jammed(s, 0.0));
}

TEST(Sleep, WithStaticFrictionABallAloneStandsOffCentre) {
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    const std::uint32_t low = w.add({1, 0.5, 1}, {});
    ASSERT_TRUE(w.sleep.sleep_if_carried(low, 0.0));
    // 0.2 rad off the top of the sleeping ball: tan 0.2 = 0.2.
    const std::uint32_t top = w.add(Vec3{1, 0.5, 1} + Vec3{std::sin(0.2), std::cos(0.2), 0}, {});
    EXPECT_FALSE(w.sleep.is_carried(top, 0.0));  // frictionless: it slides off
    w.def.sleep_friction = 0.25;
    EXPECT_TRUE(w.sleep.is_carried(top, 0.0));
    w.def.sleep_friction = 0.15;
    EXPECT_FALSE(w.sleep.is_carried(top, 0.0));
}

TEST(Sleep, AClusterInEquilibriumSettlesAtOnce) {
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    const std::uint32_t low = w.add({1, 0.5, 1}, {}), high = w.add({1, 1.5, 1}, {});
    std::vector<std::uint32_t> fell;
    w.sleep.sleep_clusters(0.0, [&](std::span<const std::uint32_t> members) { fell.assign(members.begin(), members.end()); });
    EXPECT_EQ(fell, (std::vector<std::uint32_t>{low, high}));
    EXPECT_TRUE(w.balls.asleep(low) && w.balls.asleep(high));
    // A moving ball is never quiet: nothing settles.
    Predicting m({0, -10, 0});
    m.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    m.add({1, 0.5, 1}, {0.5, 0, 0});
    m.sleep.sleep_clusters(0.0, [&](std::span<const std::uint32_t>) { ADD_FAILURE() << "a moving ball fell asleep"; });
}

TEST(Measurements, ASnapshotKeepsTheWindowAndThePerStaticCounters) {
    Measurements m;
    m.counts.ball_ball = 12;
    m.counts.cell_crossings = 40;
    m.plane_counters = {{3, 1.5}, {0, 0.0}};
    m.block_counters = {{7, 0.25}};
    m.window_start = 0.5;
    m.virial = 2.0 / 3.0;
    m.temperature_time = 1e-3;
    m.event_overlap = 1e-14;
    m.collisions_before_reset = 5;
    m.step_events.push_back({});  // the step's record is not kept
    std::stringstream stream;
    SnapshotWriter out(stream);
    m.save(out);
    Measurements back;
    SnapshotReader in(stream);
    back.restore(in, StaticCounts{2, 0, 0, 1});
    EXPECT_EQ(back.counts.ball_ball, 12u);
    EXPECT_EQ(back.counts.cell_crossings, 40u);
    ASSERT_EQ(back.plane_counters.size(), 2u);
    EXPECT_EQ(back.plane_counters[0].hits, 3u);
    EXPECT_EQ(back.plane_counters[0].impulse, 1.5);
    ASSERT_EQ(back.block_counters.size(), 1u);
    EXPECT_EQ(back.block_counters[0].hits, 7u);
    EXPECT_EQ(back.virial, 2.0 / 3.0);
    EXPECT_EQ(back.event_overlap, 1e-14);
    EXPECT_EQ(back.collisions_before_reset, 5u);
    EXPECT_TRUE(back.step_events.empty());
}

// The choice between the regions and the serial loop, fed `calls` steps of kSettle events at the
// given seconds per event each way, the first step after a change of way at `moving` more: the
// ways of the steps, run-length coded ("r8 s5": eight steps in regions, then five serially).
std::string ways(RegionChoice& choice, int calls, double regions_cost, double serial_cost, double moving = 0.0) {
    std::string seen;  // the way of each step
    for (int k = 0; k < calls; ++k) {
        const char way = choice.regions() ? 'r' : 's';
        const bool changed = k > 0 && way != seen.back();
        seen += way;
        const double cost = (way == 'r' ? regions_cost : serial_cost) + (changed ? moving : 0.0);
        choice.measured(RegionChoice::kSettle, cost * double(RegionChoice::kSettle));
    }
    std::string runs;
    for (std::size_t first = 0, next = 0; first < seen.size(); first = next) {
        next = seen.find_first_not_of(seen[first], first);
        if (next == std::string::npos) next = seen.size();
        runs += (runs.empty() ? "" : " ") + std::string(1, seen[first]) + std::to_string(next - first);
    }
    return runs;
}

// Steps of kSettle events: four make a window, one a look; the world's first window and the first
// step after each change of way are not timed.
constexpr int kSteps = static_cast<int>(RegionChoice::kWindow / RegionChoice::kSettle);
static_assert(RegionChoice::kLook == RegionChoice::kSettle);  // a look: a step moving the data, then one timed
constexpr int kFirst = static_cast<int>(RegionChoice::kFirstLook), kMost = static_cast<int>(RegionChoice::kLongestLook);
std::string run_of(char way, int steps) { return way + std::to_string(steps); }

TEST(RegionChoice, TheRegionsGoOnWhileFasterLookingAtTheSerialLoopLessAndLessOften) {
    RegionChoice choice;
    static_assert(kSteps == 4 && 8 * kFirst == kMost);
    // The first window and one timed, a look at the serial loop (a step moving the data, then one
    // timed) and a window back; then the regions, with looks after twice kFirstLook windows, and
    // twice as many each time, up to kLongestLook.
    const std::string expected = "r8 s2 " + run_of('r', 5 + 2 * kFirst * kSteps) + " s2 " +
                                 run_of('r', 5 + 4 * kFirst * kSteps) + " s2 " + run_of('r', 5 + kMost * kSteps) +
                                 " s2 " + run_of('r', 5 + kMost * kSteps) + " s2";
    const int steps = 8 + 2 + (5 + 2 * kFirst * kSteps) + 2 + (5 + 4 * kFirst * kSteps) + 2 + 2 * (5 + kMost * kSteps + 2);
    EXPECT_EQ(ways(choice, steps, 1e-6, 2e-6), expected);
}

TEST(RegionChoice, WhereTheSerialLoopIsFasterItGoesOnAndTheRegionsAreTriedAgain) {
    RegionChoice choice;
    const std::string expected = "r8 s2 r5 " + run_of('s', 1 + kFirst * kSteps) + " r2 " +
                                 run_of('s', 5 + 2 * kFirst * kSteps) + " r2";
    const int steps = 8 + 2 + 5 + (1 + kFirst * kSteps) + 2 + (5 + 2 * kFirst * kSteps) + 2;
    EXPECT_EQ(ways(choice, steps, 3e-6, 1e-6), expected);
}

TEST(RegionChoice, AWayThatBecomesFasterIsTakenAtTheNextLook) {
    RegionChoice choice;
    EXPECT_EQ(ways(choice, 8 + 2 + 5 + 2 * kFirst * kSteps, 1e-6, 2e-6), "r8 s2 " + run_of('r', 5 + 2 * kFirst * kSteps));
    // The machine changes: now the serial loop is faster. The next look finds it (against the
    // windows either side, one from before the change) and keeps it, then looks at the regions
    // again after kFirstLook windows.
    const std::string expected = "s2 r5 " + run_of('s', 1 + kFirst * kSteps) + " r2 " + run_of('s', 5 + 2 * kFirst * kSteps);
    EXPECT_EQ(ways(choice, 2 + 5 + (1 + kFirst * kSteps) + 2 + (5 + 2 * kFirst * kSteps), 4e-6, 0.5e-6), expected);
}

TEST(RegionChoice, ALookThatGainsOnlyFromADriftingMachineDoesNotWin) {
    RegionChoice choice;
    // Every step 0.125 % slower than the one before, whichever way: the look (the serial loop) is
    // faster than the window after it but slower than the mean of the two either side.
    std::string seen;
    double cost = 1e-6;
    for (int k = 0; k < 8 + 2 + 5 + 40; ++k, cost *= 1.00125) {
        seen += choice.regions() ? 'r' : 's';
        choice.measured(RegionChoice::kSettle, cost * double(RegionChoice::kSettle));
    }
    EXPECT_EQ(seen, std::string(8, 'r') + std::string(2, 's') + std::string(45, 'r'));
}

TEST(RegionChoice, AWayChosenThatSlowsDownIsLookedAtAgainAtOnce) {
    RegionChoice choice;
    EXPECT_EQ(ways(choice, 8 + 2 + 5 + 20, 1e-6, 2e-6), "r8 s2 r25");
    // The regions now take 1.6 times as long (a pile forms): after two windows a look at the
    // serial loop, still slower, and the regions go on.
    EXPECT_EQ(ways(choice, 8 + 2 + 5 + 8, 1.6e-6, 2e-6), "r8 s2 r13");
    // Slower again, but by less than kSlower since they were last chosen: no look.
    EXPECT_EQ(ways(choice, 16, 2.2e-6, 2.5e-6), "r16");
}

TEST(RegionChoice, AOneOffSlowWindowNeitherBringsALookNorLetsOneWin) {
    // The regions at 1 µs per event, the serial loop at 1.2, and windows of the regions with a
    // re-sort of the balls in them at 5: alone, one brings no look, and the look that comes
    // after one is held against the faster window either side (the mean would be 3).
    RegionChoice choice;
    EXPECT_EQ(ways(choice, 8 + 2 + 5 + 4, 1e-6, 1.2e-6), "r8 s2 r9");
    EXPECT_EQ(ways(choice, kSteps, 5e-6, 1.2e-6), "r4");
    EXPECT_EQ(ways(choice, (2 * kFirst - 3) * kSteps, 1e-6, 1.2e-6), run_of('r', (2 * kFirst - 3) * kSteps));
    EXPECT_EQ(ways(choice, kSteps, 5e-6, 1.2e-6), "r4");  // the last window before the look
    EXPECT_EQ(ways(choice, 2 + 5 + 8, 1e-6, 1.2e-6), "s2 r13");
}

TEST(RegionChoice, TheFirstWindowIsNotTimed) {
    RegionChoice choice;
    // The world's first steps take five times as long (first touches of its memory): timed, they
    // would make the serial loop's look win against the regions, which are faster.
    for (int k = 0; k < kSteps; ++k) choice.measured(RegionChoice::kSettle, 5e-6 * double(RegionChoice::kSettle));
    EXPECT_EQ(ways(choice, 4 + 2 + 5 + 8, 1e-6, 1.5e-6), "r4 s2 r13");
}

TEST(RegionChoice, TheStepAfterASwitchIsNotTimed) {
    // The serial loop is 20 % faster, but the first step after each change of way takes three
    // times as long while the data moves: timed, it would make the look lose.
    RegionChoice choice;
    EXPECT_EQ(ways(choice, 8 + 2 + 5 + 8, 1e-6, 0.8e-6, 2e-6), "r8 s2 r5 s8");
}

TEST(RegionChoice, AStepAsLongAsAWindowIsTimedWholeAfterASwitch) {
    // A world of 10⁶ balls: each step a window. The first is not timed; a look and the step back
    // are timed whole, so that a look costs one step the other way.
    RegionChoice choice;
    std::string seen;
    for (int k = 0; k < 6; ++k) {
        seen += choice.regions() ? 'r' : 's';
        choice.measured(4 * RegionChoice::kWindow, (choice.regions() ? 1.0 : 2.0) * double(4 * RegionChoice::kWindow));
    }
    EXPECT_EQ(seen, "rrsrrr");
}

TEST(RegionChoice, AWindowEndsOnlyOnceItHoldsEnoughEvents) {
    RegionChoice choice;
    for (int k = 0; k < 2000; ++k) choice.measured(RegionChoice::kWindow / 1000 - 1, 1.0);
    EXPECT_TRUE(choice.regions());  // 62 000 events: the first window (not timed) and part of the next
    choice.measured(RegionChoice::kWindow, 0.0);
    EXPECT_FALSE(choice.regions());  // the second window done: a look at the serial loop
}

// Two regions of a box 96 cells long: the plan the shares are tested on.
RegionPlan two_regions() {
    Cells cells;
    cells.configure(1.0, std::nullopt, {}, 9600);
    EXPECT_TRUE(cells.fit_dense({0, 0, 0}, {95, 9, 9}));
    std::vector<CellKey> keys;
    for (std::int32_t x = 0; x < 96; ++x) keys.push_back({x, 0, 0});
    RegionPlan plan;
    plan.plan(cells, keys, 9600, Vec3{}, 2, 0);
    EXPECT_EQ(plan.count(), 2u);
    return plan;
}

TEST(RegionShares, ARegionThatTookLongerGetsFewerBalls) {
    RegionShares shares;
    shares.planned(two_regions());
    EXPECT_EQ(shares.weights().of, (std::vector<double>{1.0, 1.0}));
    const std::vector<double> seconds{1.3, 1.0};
    shares.ran(seconds, RegionShares::kLeastEvents);
    ASSERT_TRUE(shares.uneven(0));
    shares.rebalance();
    // Each weight divided by its time, so that the next plan takes as long in each; their mean 1.
    const std::vector<double>& of = shares.weights().of;
    EXPECT_NEAR(of[0] / of[1], 1.0 / 1.3, 1e-12);
    EXPECT_NEAR(of[0] + of[1], 2.0, 1e-12);
    // Measured afresh: nothing yet calls for another plan; a plan cut as before keeps them.
    EXPECT_FALSE(shares.uneven(0));
    shares.planned(two_regions());
    EXPECT_NEAR(shares.weights().of[0] / shares.weights().of[1], 1.0 / 1.3, 1e-12);
}

TEST(RegionShares, ANearTieOrTooFewEventsKeepsThePlan) {
    const std::vector<double> close{1.09, 1.0}, apart{2.0, 1.0}, three{1.0, 1.0, 5.0};
    RegionShares tie;
    tie.planned(two_regions());
    tie.ran(close, 10 * RegionShares::kLeastEvents);
    EXPECT_FALSE(tie.uneven(0));
    RegionShares few;
    few.planned(two_regions());
    few.ran(apart, RegionShares::kLeastEvents - 1);
    EXPECT_FALSE(few.uneven(0));
    few.planned(two_regions());  // a plan cut as before (a re-sort): the time measured counts on
    few.ran(apart, 1);
    EXPECT_TRUE(few.uneven(0));
    EXPECT_FALSE(few.uneven(RegionShares::kLeastEvents + 1));  // a large world waits for more
    // A run of another plan's regions counts for nothing.
    RegionShares other;
    other.planned(two_regions());
    other.ran(three, 10 * RegionShares::kLeastEvents);
    EXPECT_FALSE(other.uneven(0));
}

TEST(RegionShares, AWeightMovesByTwiceAtMostAndStaysWithinFourOfTheOthers) {
    RegionShares shares;
    shares.planned(two_regions());
    const std::vector<double> idle{10.0, 0.0};  // the second region had nothing to do
    shares.ran(idle, RegionShares::kLeastEvents);
    ASSERT_TRUE(shares.uneven(0));
    shares.rebalance();
    EXPECT_NEAR(shares.weights().of[1] / shares.weights().of[0], 4.0, 1e-12);  // halved and doubled
    for (int k = 0; k < 3; ++k) {
        shares.ran(idle, RegionShares::kLeastEvents);
        shares.rebalance();
    }
    EXPECT_NEAR(shares.weights().of[1] / shares.weights().of[0], RegionShares::kWidest, 1e-12);
}

TEST(RegionShares, APlanCutIntoOtherPiecesStartsFromEqualShares) {
    RegionShares shares;
    shares.planned(two_regions());
    const std::vector<double> seconds{1.0, 2.0};
    shares.ran(seconds, RegionShares::kLeastEvents);
    shares.rebalance();
    EXPECT_GT(shares.weights().of[0], shares.weights().of[1]);
    shares.planned(RegionPlan{});  // one region: the serial loop
    EXPECT_TRUE(shares.weights().of.empty());
    shares.planned(two_regions());
    EXPECT_EQ(shares.weights().of, (std::vector<double>{1.0, 1.0}));
}
