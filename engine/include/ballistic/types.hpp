// Ballistic — the value types of the public API: definitions, handles, events, states, rays,
// counters and the error every rejected call throws (world.hpp has the World that uses them).
// Units are free but must be consistent; field comments give them as length, time and mass.
#pragma once

#include <ballistic/box.hpp>
#include <ballistic/task_system.hpp>
#include <ballistic/vec3.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <array>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

namespace ballistic {

// Every rejected call throws this. The message names the field, the index (when the field
// belongs to an element of a list) and the offending value; a rejected call leaves the world
// exactly as it was.
class InvalidArgument : public std::invalid_argument {
public:
    InvalidArgument(std::string field, std::string message)
        : std::invalid_argument(message), field_(std::move(field)) {}
    // Dotted path of the offending field, e.g. "balls[3].radius".
    const std::string& field() const noexcept { return field_; }

private:
    std::string field_;
};

// World::step() reached WorldDef::step_event_budget: the world stands, consistent, at time()
// (the time of the last event processed, or of a test of sleeping after it; every ball there),
// and the next step goes on from it.
class BudgetExceeded : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// World::step() saw the embedder's interrupt flag set (World::set_interrupt): the world stands,
// consistent, at time() (the time of the last event processed or of a test of sleeping after
// it, or where it was when the step began), and the next step goes on from it.
class StepInterrupted : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Generation-checked handle of a ball, a plane or a cylinder (one type each): it stays valid
// while storage is compacted, reordered or others are removed, and becomes stale (never silently
// re-targeted) when its thing is removed. Zero is the null handle. A static's index
// (World::plane(), the counters, CollisionEvent::static_index) is its place among the statics of
// its kind now: removing one moves the last of its kind into the hole.
template <class Tag>
struct Id {
    std::uint64_t value = 0;

    constexpr std::uint32_t index() const { return static_cast<std::uint32_t>(value & 0xffffffffu); }
    constexpr std::uint32_t generation() const { return static_cast<std::uint32_t>(value >> 32); }
    constexpr explicit operator bool() const { return value != 0; }
    friend constexpr bool operator==(Id, Id) = default;
};
using BallId = Id<struct BallTag>;
using PlaneId = Id<struct PlaneTag>;
using CylinderId = Id<struct CylinderTag>;
using CapsuleId = Id<struct CapsuleTag>;
using BlockId = Id<struct BlockTag>;

// Estimated memory per ball (WorldDef::memory_limit); World::bytes_per_ball() measures it:
// 280–304 bytes in the gas benchmarks' scenes, 331 in demos/scenes/pour.json settled (its
// tables of rests and contacts), 382 in demos/scenes/funnel.json (a small world, where tables of
// fixed size count).
inline constexpr std::size_t kBytesPerBall = 384;
// What parallel event processing adds per ball with more than one thread: the regions' stamps, 24
// bytes each, at most 8 per ball (docs/architecture.md, "Memory").
inline constexpr std::size_t kBytesPerBallInRegions = 200;

// More threads than this bring nothing on any machine Ballistic runs on, and each costs a stack.
inline constexpr int kMaxThreads = 1024;

struct WorldDef {
    Vec3 gravity{0.0, 0.0, 0.0};  // shared by every ball (unit: length/time²)
    double restitution = 1.0;     // default coefficient of restitution e, in [0, 1]
    // Coulomb friction of every collision, ball–ball and ball–static (dimensionless, >= 0;
    // default 0: frictionless). A collision's tangential impulse slows the sliding of the two
    // surfaces past each other, by at most `friction` times the normal impulse, and never reverses
    // it: the balls are particles (no spin), and a collision with friction only loses energy.
    // Between collisions motion stays frictionless (a ball resting on a plane slides). A pour
    // settles sooner with it: sliding balls stop where frictionless ones would spread.
    double friction = 0.0;
    // The world's time at creation: a saved state goes on from the time it was saved at.
    // (unit: time; finite)
    double time = 0.0;
    // Periodic box: balls leaving through one face re-enter through the opposite one, along the
    // axes periodic_axes names (all three by default). Every periodic side must be at least three
    // cell widths (a cell is one largest ball diameter wide). Along an axis that does not wrap
    // the box is where the balls start; planes whose normals lie along such axes (a floor, a
    // ceiling) keep them in, and a cylinder may lie along the one periodic axis (a pipe). The bulk
    // pressure (World::pressure) needs all three axes periodic.
    std::optional<Box> periodic;
    std::array<bool, 3> periodic_axes{true, true, true};
    // Contacts whose normal approach speed is below this are elastic, and a ball that reaches a
    // plane its acceleration pushes it into this slowly, or would bounce off it this slowly,
    // settles on it and slides. This is what
    // bounds the work of resting contact and inelastic collapse (see docs/architecture.md): a ball
    // resting on an awake ball bounces about |g| / (2 rest_speed) times a second until it sleeps
    // (98 times under |g| = 9.81), rising rest_speed² / (2 |g|) (0.13 thousandths of a length
    // unit). It trades events against the smallest impacts that dissipate: smaller makes slow
    // contacts lose energy down to gentler impacts and costs proportionally more events while a
    // pile settles (in `demos/scenes/pile.json`, 0.03 costs 1.2–1.35 times the events of 0.05;
    // the former defaults, 0.01 with sleep_speed 0.05, 2.7 times the events and 2.8 times the
    // time). Keep it well below sleep_speed, so that such a ball is quiet (both at 0.05 cost
    // pile.json 1.7 times the events); above it (with sleep_speed > 0) it is refused, as a ball
    // pressed into another would never sleep. However small it is, a pressed contact leaves fast enough
    // to rise 10⁻⁶ of the radius, so it bounces at most √(a / 8·10⁻⁶ r) times a second, a the
    // acceleration pressing it (|g| for a ball on a sleeping one). (unit: length/time; must be > 0)
    double rest_speed = 0.05;
    // Sleeping (docs/architecture.md, "Piles that settle"). In a world with gravity, planes and
    // dissipation (restitution below one, or friction), a ball is quiet once it has been slower
    // than sleep_speed at each of its last sleep_events events (by default its last one), or at
    // each of its events for sleep_time (a ball added slower than sleep_speed is quiet at once).
    // Quiet balls fall asleep when their weight is justified:
    //   - alone, at one of its collisions, when its weight and the push of every ball resting on
    //     it lie in the cone of the contact normals of the statics and sleeping balls it touches,
    //     and no awake ball is under it;
    //   - as a cluster, at the tests of sleeping (within a step, at most every sleep_interval; at
    //     its end; before the first event of a loaded world), when non-negative contact forces
    //     between its touching quiet balls, the statics and the sleeping balls (and, with
    //     sleep_friction, friction within its cone) hold every ball's weight to 1 %; the members
    //     resting on a moving ball, and those above them, stay awake; of a cluster that does not
    //     balance, the part that does sleeps. A quiet ball that has
    //     stayed within 1 % of its radius of one place for 10 sleep_time counts as balanced.
    // A ball jammed between other bodies that collides more than 64 times in a row at one instant
    // or when it can have travelled no more than 10⁻⁹ of its radius since the last also stops and
    // sleeps (with sleeping off too, in a dissipative world), and so does at once
    // a slow ball wedged among sleeping balls and statics: pressed into one of them, no velocity
    // leaves them all. A sleeping ball
    // stands still, costs no event, and is an obstacle for awake balls: the sleeping pile carries
    // as an immovable ball an impact slower than sleep_speed (one slower than rest_speed stops
    // the ball that meets it moving into every sleeping ball and static it touches, at once) and
    // one that pushes the ball it hits into the statics and sleeping balls holding it up, too
    // gently to lift it by wake_lift of its radius (below; the ball that hit meets every sleeping
    // ball and static it touches at once). Any other impact wakes the ball it hits, which takes it
    // with its true mass. A ball that moves wakes each sleeping ball resting
    // on it once it has moved away from it by the touching gap, min(sleep_speed² / (2 |g|),
    // 10⁻³ r) (one that the jam stopped, not before it has slept the time to open that gap at
    // sleep_speed). Elastic frictionless worlds, worlds without gravity and worlds without
    // planes, capsules or blocks never sleep.
    // sleep_speed trades settling time (higher: balls sleep sooner) against motion frozen (a ball
    // slower than this may be stopped, and a push slower than this does not move a sleeping
    // ball: a ball dropped from sleep_speed² / (2 |g|), 0.5 thousandths of a length unit under
    // |g| = 9.81, onto a sleeping pile does not wake it); 0 switches sleeping off, but for
    // balls jammed at one instant, which the jam rule stops (docs/architecture.md, "Piles that
    // settle", Jams). Both defaults are set for balls of radius about 0.1 to 1 under |g| ≈ 10
    // (the scenes in demos/scenes); at other scales, scale both with the square root of |g|
    // times the radius.
    // (unit: length/time; >= 0)
    double sleep_speed = 0.1;
    // How long a ball must have been slow to be quiet (unit: time; >= 0) ...
    double sleep_time = 0.1;
    // ... or after how many slow events in a row (>= 1). The default, 1, makes a ball quiet at an
    // event that leaves it slow: what holds it is judged by the balance of its contact forces,
    // not by how long it waited, and every event a slow ball waits costs its supports too (a
    // history of 256 events made `demos/scenes/pile.json` cost 2.2 times the events). More asks a
    // ball to have been slow for longer before it may sleep; it also bounds the events a resting
    // ball costs before it sleeps however small rest_speed is. sleep_time counts for the
    // stillness rule as well (ten sleep_time within 1 % of its radius of one place).
    std::uint32_t sleep_events = 1;
    // Static friction for the cluster test of sleeping (docs/architecture.md, "Piles that settle"):
    // a quiet cluster stands when contact forces that push and hold, each within Coulomb's cone of
    // this coefficient, carry its weight. It changes no motion (`friction` above does); it only
    // decides when slow balls may stop. 0 (the default) is frictionless: only a jammed pile stands,
    // and a ball off-centre on another slides off. A frictionless pile on a floor whose lowest
    // layer is not jammed (a 2000-ball pour into a 20 × 20 box covers 78 % of the floor, below the
    // 84 % at which disks jam) keeps spreading and never sleeps; 0.5 lets it stand, but its
    // frictionless motion keeps it creeping for seconds, where `friction` 0.5 stops it (see
    // docs/architecture.md, "Piles that settle", Why friction). A world with `friction` stands with
    // at least that coefficient: the friction that holds balls in motion holds them at rest.
    // (dimensionless; >= 0)
    double sleep_friction = 0.0;
    // How hard a sleeping ball may be hit and stay asleep, as the height (a fraction of its
    // radius) to which the impact's energy could lift it: an impact that pushes the ball into
    // the statics and sleeping balls touching it (within the cone of their normals, or held with
    // the standing friction) and brings less energy than m |g| wake_lift r (½ μ u², μ the two
    // balls' reduced mass, u the approach speed) is carried by the sleeping pile as by an
    // immovable ball. In the hard-sphere collisions this stands in for, the pile would ring and
    // fall back to where it stood, since that energy cannot lift one of its balls out of its
    // place. A harder impact, or one pushing the ball off what carries it, wakes it, and it takes
    // the impact with its true mass. Every impact the pile carries at rest_speed or faster is
    // met at once with each sleeping ball and static the ball that hit touches, with Poisson's
    // restitution (never faster than it came). Higher carries harder impacts: fewer events, less
    // splash; lower wakes more of the pile. Between equal balls of radius 0.3 under |g| = 9.81
    // the default carries approach speeds up to 1.7 (a ball dropped from half its radius onto
    // another); 0 carries no impact faster than sleep_speed. (dimensionless; >= 0)
    double wake_lift = 0.25;
    // How often the cluster test of sleeping runs within a step: at the multiples of this
    // interval (of the world's time) that follow an event, over the balls awake when the step
    // began and those woken since, once the events since the last test number half of those
    // balls; the end of every step tests every awake ball. So a pile settles at about the same
    // pace for any step longer than the interval: a ball pressed on an awake ball bounces every
    // 2 rest_speed / |g| (10 ms under |g| = 9.81) and chatters until a test finds its cluster
    // standing. Where events come fast (a landing) the count of events sets the pace, and a test
    // costs about what the events since the last one cost; 0 tests at the ends of steps alone,
    // and then the caller's step decides how long a pile chatters. (unit: time; >= 0; default
    // 2⁻¹³ ≈ 0.12 ms, a power of two: its multiples are exact)
    double sleep_interval = 0x1p-13;
    // Memory the world's balls may take, estimated at kBytesPerBall each (their state, contact,
    // queue entry, cells and handle, with room for the table of rests), and kBytesPerBallInRegions
    // more with more than one thread: add_balls() and generate_balls() refuse more before
    // allocating anything. The default protects a machine of
    // 24 GiB. (unit: bytes)
    std::size_t memory_limit = std::size_t{16} << 30;
    // Events (collisions, cell crossings, re-predictions) one step may process: a step that
    // reaches it stops after that event and throws BudgetExceeded, with the world consistent at
    // the event's time. Bounds the work of any step, whatever the input (a mass ratio whose exact
    // answer needs 10^12 collisions); 0: no budget. The stop is the same event for every thread
    // count.
    std::uint64_t step_event_budget = 1'000'000'000;
    // The step's collisions recorded for events(): at most this many (the rest are counted by
    // events_unrecorded()); 0 records none. Bounds the memory of a step whatever happens in it.
    std::size_t event_record_limit = 1u << 20;
    // Worker threads for the parallel phases: 0 = all hardware threads, 1 = strictly serial, at
    // most kMaxThreads. Results are bit-identical for every value. Ignored when task_system is
    // set.
    int threads = 0;
    // The task system the parallel phases run on (ballistic/task_system.hpp): an embedder's own
    // job system, shared by any number of worlds. Null: oneTBB with `threads` threads. Results
    // are bit-identical for every task system.
    std::shared_ptr<TaskSystem> task_system;
    // Worlds with at least this many balls (and more than one thread) process their events in
    // regions of space, each with its own loop, at once (docs/architecture.md, "Parallel event
    // processing: regions"); smaller ones process them serially, because a region's waits at its
    // neighbours cost more than a small world's share of events saves. The other parallel phases
    // (end of step, measurements, ray batches) run at any size. Results are bit-identical for every
    // value.
    std::size_t parallel_events_min_balls = 10000;
    // Such worlds time their events now in regions, now serially, and keep the faster way (a
    // region's waits cost more on some machines than on others); and they time each region's own
    // work and plan the regions again when one takes longer than another (cores need not be
    // equally fast). False: regions always, in equal shares. Snapshots do not keep it
    // (RestoreOptions). Results are bit-identical either way.
    bool regions_when_faster = true;
};

// How World::restore() builds the world it reads: the machine's settings, which a snapshot does
// not carry (the rest of WorldDef comes from the snapshot).
struct RestoreOptions {
    int threads = 0;                                     // WorldDef::threads
    std::shared_ptr<TaskSystem> task_system;             // WorldDef::task_system
    std::size_t memory_limit = std::size_t{16} << 30;    // WorldDef::memory_limit, checked first
    bool regions_when_faster = true;                     // WorldDef::regions_when_faster
};

// The snapshot format World::save() writes; restore() reads this version only.
inline constexpr std::uint32_t kSnapshotVersion = 8;

// One-sided infinite wall: balls live on the side the normal points to.
struct PlaneDef {
    Vec3 point;                   // any point on the plane (unit: length)
    Vec3 normal{0.0, 1.0, 0.0};   // need not be unit length; must not be zero
};

// Infinite column; balls live outside it.
struct CylinderDef {
    Vec3 point;                 // any point on the axis (unit: length)
    Vec3 axis{0.0, 1.0, 0.0};   // direction of the axis; need not be unit length; not zero
    double radius = 1.0;        // (unit: length; > 0)
};

// Finite round static: every point within `radius` of the segment from a to b; balls live
// outside it. a == b makes a fixed sphere (a peg). Not allowed in a world periodic along any axis.
struct CapsuleDef {
    Vec3 a;                 // the segment's ends (unit: length)
    Vec3 b;
    double radius = 0.5;    // (unit: length; > 0)
};

// Axis-aligned box (faces, edges and corners); balls live outside it. Not allowed in a world
// periodic along any axis.
struct BlockDef {
    Vec3 min;               // (unit: length); min < max along every axis
    Vec3 max;
};

struct BallDef {
    Vec3 position;         // centre (unit: length)
    Vec3 velocity;         // (unit: length/time)
    double radius = 0.5;   // (unit: length; > 0)
    double mass = 1.0;     // (unit: mass; > 0)
    std::uint64_t user_data = 0;  // the embedder's own value, kept with the ball (World::user_data)
    // Added asleep (World::sleeping), as a ball that fell asleep there: it stands still (its
    // velocity must be zero), costs no event, and is an obstacle for awake balls until an impact,
    // a support that leaves it or a change of the world wakes it. Taken as given, its balance not
    // tested: what a world's sleeping balls were when saved (the `--state` scene files write it),
    // so that a pile goes on asleep where it was. A ball with nothing under it (no static and no
    // ball touching it from below, but balls added asleep in the same call with nothing under
    // them) is added awake, standing still, and falls.
    // Only in a world where balls can sleep (gravity, dissipation and a plane, capsule or block).
    bool sleeping = false;
};

// What World::step() did.
struct StepResult {
    std::uint64_t events = 0;      // events processed: collisions, cell crossings, re-predictions
    std::uint64_t collisions = 0;  // of which collisions
    std::size_t sleeping = 0;      // balls asleep at the end of the step
    std::size_t awake = 0;         // balls awake at the end of the step
    // Of the events, those the regions processed at once (docs/architecture.md, "Parallel event
    // processing: regions"): 0 on one thread and in worlds below
    // WorldDef::parallel_events_min_balls. It depends on the thread count; the results do not.
    std::uint64_t in_regions = 0;
    // How the regions shared those events (bench/scaling reads them): the regions planned (1:
    // serial), the runs of the regions (each ends at the step's end, a test of sleeping, or an
    // event they leave to the serial loop), the events of the busiest region of each run summed
    // (the regions' part of the step's critical path), and the events they processed and then
    // undid at a stop (work lost).
    std::uint32_t regions = 1;
    std::uint64_t region_runs = 0;
    std::uint64_t region_span = 0;
    std::uint64_t undone = 0;
    // Of the regions' events (undone ones too), those within reach of another region's cells:
    // each locks cells it shares with that region and waits until that region has passed its
    // time. In all, and of the busiest region's in each run (a part of region_span).
    std::uint64_t region_interface = 0;
    std::uint64_t region_span_interface = 0;
    // Wall-clock seconds of the regions' runs, and of them the own work of each run's busiest
    // region, summed: the rest of those seconds it waited for others. Timings, unlike the counts
    // above: they differ from one run of a program to the next.
    double region_seconds = 0.0;
    double region_work_seconds = 0.0;
};

enum class EventKind : std::uint8_t { BallBall = 0, BallPlane = 1, BallCylinder = 2, BallCapsule = 3, BallBlock = 4 };

// One collision, as processed. Events of a step come in time order; at one instant by kind, then
// by the balls' storage order (the same for every thread count).
struct CollisionEvent {
    double time = 0.0;            // world time of impact (unit: time)
    EventKind kind = EventKind::BallBall;
    BallId ball;                  // the ball (for ball–ball, the first of the pair)
    BallId other;                 // the second ball of a ball–ball event, null otherwise
    std::uint32_t static_index = 0;  // plane, cylinder, capsule or block index for ball–static events
    Vec3 point;                   // contact point (unit: length)
    Vec3 normal;                  // unit normal, from `ball` towards the other body's side of contact
    // Magnitude of the impulse exchanged (unit: mass·length/time). An impact on sleeping balls met
    // at several contacts at once (docs/architecture.md, "Piles that settle", Carried impacts)
    // reports the binary impulse of the contact hit.
    double impulse = 0.0;
};

struct BallState {
    BallId id;
    Vec3 position;   // at the world's current time
    Vec3 velocity;
    double radius = 0.0;
    double mass = 0.0;
    bool sleeping = false;
    std::uint64_t user_data = 0;
};

struct RayHit {
    enum class Target : std::uint8_t { Ball, Plane, Cylinder, Capsule, Block };
    Target target = Target::Ball;
    double distance = 0.0;       // along the ray, in units of |direction| (unit: length for unit dirs)
    Vec3 point;
    Vec3 normal;                 // outward unit normal of the surface hit
    BallId ball;                 // the ball, when target is Ball
    std::uint32_t static_index = 0;  // plane, cylinder, capsule or block index otherwise
};

struct Ray {
    Vec3 origin;
    Vec3 direction;              // not zero; need not be unit length
    double max_distance = std::numeric_limits<double>::infinity();
};

struct StaticCounters {
    std::uint64_t hits = 0;
    double impulse = 0.0;        // sum of impulse magnitudes (unit: mass·length/time)
};

struct EventCounts {
    std::uint64_t ball_ball = 0;
    std::uint64_t ball_plane = 0;
    std::uint64_t ball_cylinder = 0;
    std::uint64_t ball_capsule = 0;
    std::uint64_t ball_block = 0;
    std::uint64_t cell_crossings = 0;   // bookkeeping events, not collisions
    std::uint64_t collisions() const { return ball_ball + ball_plane + ball_cylinder + ball_capsule + ball_block; }
};

// Read-only SoA view of the balls at the world's current time, in storage order.
struct BallView {
    std::span<const double> x, y, z;
    std::span<const double> vx, vy, vz;
    std::span<const double> radius;
    std::span<const BallId> id;
};

}  // namespace ballistic
