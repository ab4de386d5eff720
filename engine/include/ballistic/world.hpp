// Ballistic — exact event-driven simulation of balls under gravity.
//
// Public API. Includes neither TBB nor xsimd: an embedding program needs only this header (with
// the ones it includes) and the ballistic::engine library. Units are free (the engine never
// assumes SI), but must be consistent; field comments give them as length, time and mass.
#pragma once

#include <ballistic/types.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace ballistic {

// Thread safety: the const methods never change the world (no cache is rebuilt behind the
// caller's back), so any number of threads may call them at once; a non-const method needs the
// world to itself. Different worlds are independent. Every parallel phase runs on the world's
// TaskSystem, from the calling thread.
class World {
public:
    explicit World(const WorldDef& def = {});
    ~World();
    // A world is moved between steps (in a pause of its step: std::logic_error).
    World(World&&);
    World& operator=(World&&);
    World(const World&) = delete;
    World& operator=(const World&) = delete;

    // Snapshots (docs/architecture.md, "Snapshots"): the complete world — settings, statics, every
    // ball's state and history, the handles, the pending events, the measurements — in
    // Ballistic's versioned binary format. A restored world continues bit-identically to the one
    // saved, for any thread count or task system. The last step's events() are not kept. save()
    // throws std::runtime_error when the stream fails.
    void save(std::ostream& out) const;
    // Throws InvalidArgument (field "snapshot", or the setting's "world.*" field) for a stream
    // that is not a snapshot, is of another format version, ends early, fails its checksum or
    // holds inconsistent state, and for more balls than options.memory_limit allows (checked
    // before they are allocated).
    static World restore(std::istream& in, const RestoreOptions& options = {});

    // Statics may be added and removed between steps. Removing one moves the last static of its
    // kind into its index (and its counters with it) and wakes every ball: the supports' loads
    // change.
    PlaneId add_plane(const PlaneDef& def);
    CylinderId add_cylinder(const CylinderDef& def);
    CapsuleId add_capsule(const CapsuleDef& def);
    BlockId add_block(const BlockDef& def);
    void remove_plane(PlaneId id);
    void remove_cylinder(CylinderId id);
    void remove_capsule(CapsuleId id);
    void remove_block(BlockId id);
    bool contains(PlaneId id) const;
    bool contains(CylinderId id) const;
    bool contains(CapsuleId id) const;
    bool contains(BlockId id) const;
    // A live static's index now, and the handle of the static at an index; InvalidArgument for
    // a stale handle or an index out of range.
    std::uint32_t index(PlaneId id) const;
    std::uint32_t index(CylinderId id) const;
    std::uint32_t index(CapsuleId id) const;
    std::uint32_t index(BlockId id) const;
    PlaneId plane_id(std::uint32_t index) const;
    CylinderId cylinder_id(std::uint32_t index) const;
    CapsuleId capsule_id(std::uint32_t index) const;
    BlockId block_id(std::uint32_t index) const;

    // Balls may be added and removed between steps. add_balls is all-or-nothing; error fields
    // read "balls[i].field". Removing a ball wakes the sleeping balls it touched.
    BallId add_ball(const BallDef& def);
    std::vector<BallId> add_balls(std::span<const BallDef> defs);
    void remove_ball(BallId id);
    // Between steps, validated as add_ball() (finite, within kMaxMagnitude): the ball is moved
    // (it must then overlap no ball and no static), given a velocity, or given an impulse
    // (velocity += impulse / mass). It wakes, leaves the planes it rested on unless the new
    // velocity keeps it on them, and wakes the sleeping balls it touched; it and they are
    // predicted again, every other ball keeps its event. A rejected call changes nothing.
    void set_position(BallId id, Vec3 position);
    void set_velocity(BallId id, Vec3 velocity);
    void apply_impulse(BallId id, Vec3 impulse);
    // Between steps: puts the ball to sleep where it is, its velocity dropped (taken as given, and
    // only where the jam rule holds: gravity, dissipation and a plane, capsule or block; a ball
    // in mid-air hangs there, frozen, where BallDef::sleeping would let it fall), or wakes it
    // standing still, as set_velocity() with zero does (it may sleep again where it can stand,
    // when sleep_speed allows). A sleeping ball costs no event of its own until an impact that
    // wakes it, a support leaving it or a change of the world. A rejected call changes nothing.
    void set_sleeping(BallId id, bool sleeping);
    // The embedder's 64-bit value kept with each ball (BallDef::user_data; 0 by default).
    void set_user_data(BallId id, std::uint64_t value);
    std::uint64_t user_data(BallId id) const;

    // Processes every event in [time(), time() + dt] in time order, then brings every ball to
    // time() + dt. The step's collisions are available from events() afterwards. Throws
    // BudgetExceeded, the world consistent at the time reached, when the step would process more
    // than def().step_event_budget events, and StepInterrupted when the interrupt flag is set;
    // the balls keep their state and the step's tests of sleeping stand as they were (save()
    // keeps them too), so a step from there to exactly the stopped step's end, with no change to
    // the world between, gives the bits of that step never stopped, unless balls roamed in it
    // (a lone fast ball, in a step long enough to cross many cells: the stop brings it back to
    // its cell, and it may come down at other bits; docs/architecture.md, "Cells of several sizes").
    // When memory runs out (std::bad_alloc), the world stands consistent at the time of its last
    // event or of a test of sleeping after it (WorldDef::sleep_interval), where a budget of as
    // many events would have stopped it, up to the balls that test would have put to sleep (at
    // time() + dt once every event is done; where it was, before the first; at the last event
    // when memory ran out queueing what follows it, where the budget would have gone on to a
    // test beyond it), and the next step goes on from there.
    StepResult step(double dt);
    // The same step, pausing within it for the caller: at `pause_at` (after time(); +inf: no
    // pause), and then at each time pause() returns (after the pause's), while that time is at or
    // before time() + dt. Every event before the pause is done and time() reads it while
    // pause(*this) runs; there the caller may add balls (add_ball, add_balls: they enter at that
    // time, each predicted alone, as between steps) and read single balls at that time (is_free,
    // ball, sleeping, contains, ball_count). balls(), the measurements and the energies still
    // describe the step's start; save(), moving the world and every other change are refused
    // (std::logic_error). A pause that adds no ball changes no bit of the result. A time not
    // after its pause's is an InvalidArgument. An exception from pause() ends the step there, the
    // world consistent at the pause, and goes on to the caller. A spout that adds its balls at
    // their exact times this way costs what its balls do, whatever the step.
    StepResult step(double dt, double pause_at, const std::function<double(World&)>& pause);
    void set_step_event_budget(std::uint64_t events);  // 0: none
    // A flag another thread (or a signal handler) may set to stop a step at the next event: the
    // step then throws StepInterrupted, the world consistent at the time reached. Read at every
    // event, never written; it must outlive its use. Null (the default): none.
    void set_interrupt(const std::atomic<bool>* flag);
    // How many of a step's collisions events() keeps (WorldDef::event_record_limit); 0: none.
    void set_event_record_limit(std::size_t collisions);
    // Events processed since creation: collisions, cell crossings and re-predictions (what
    // step_event_budget counts).
    std::uint64_t events_processed() const;

    // Both wake every sleeping ball (their supports' loads change); so does any restitution that
    // leaves the world elastic and frictionless, where no ball sleeps.
    void set_gravity(Vec3 gravity);
    void set_restitution(double restitution);

    double time() const;
    // How many tasks the world's parallel phases run at once (its task system's concurrency).
    int concurrency() const;
    const WorldDef& def() const;
    std::size_t ball_count() const;
    // The most balls this world may hold: its memory_limit over kBytesPerBall, and at most 2^29.
    std::size_t max_balls() const;
    std::size_t plane_count() const;
    std::size_t cylinder_count() const;
    std::size_t capsule_count() const;
    std::size_t block_count() const;
    const PlaneDef& plane(std::uint32_t index) const;         // normal stored unit length
    const CylinderDef& cylinder(std::uint32_t index) const;   // axis stored unit length
    const CapsuleDef& capsule(std::uint32_t index) const;     // as given
    const BlockDef& block(std::uint32_t index) const;         // as given
    bool contains(BallId id) const;
    BallState ball(BallId id) const;   // throws InvalidArgument for a stale or null id
    BallView balls() const;
    // Would a ball of this radius at this position overlap no ball and no static, and lie on the
    // inner side of every plane?
    bool is_free(Vec3 position, double radius) const;

    std::span<const CollisionEvent> events() const;   // the last step's collisions
    // Collisions of the last step beyond def().event_record_limit, counted but not recorded.
    std::uint64_t events_unrecorded() const;

    bool sleeping(BallId id) const;   // throws InvalidArgument for a stale or null id
    std::size_t sleeping_count() const;
    // One byte per ball in storage order (as balls()): 1 when it sleeps.
    std::vector<std::uint8_t> sleeping_flags() const;

    // Measurements. Counters run from creation or from the last reset_measurements().
    EventCounts event_counts() const;
    std::span<const StaticCounters> plane_counters() const;
    std::span<const StaticCounters> cylinder_counters() const;
    std::span<const StaticCounters> capsule_counters() const;
    std::span<const StaticCounters> block_counters() const;
    double kinetic_energy() const;
    Vec3 momentum() const;
    // k_B T with k_B = 1: Σ m |v − v_cm|² / (3 (N − 1)).
    double temperature() const;
    // Worlds periodic along all three axes: ρ⟨kT⟩ + Σ_collisions J·σ / (3 V Δt) over the
    // measurement window (NaN otherwise, or when the window is empty; with walls, their
    // plane_counters() give the pressure on them).
    double pressure() const;
    // Largest overlap seen at any collision in the window and among the balls now (unit: length).
    double max_overlap() const;
    // Balls whose centre is behind a plane, inside a cylinder, a capsule or a block, or not finite.
    std::size_t escaped_count() const;
    // FNV-1a 64 over, for each ball in handle-index order (creation order until handles of
    // removed balls are reused), the IEEE-754 bits of its position and velocity at the current
    // time (x, y, z, vx, vy, vz; each value's 8 bytes from least significant).
    std::uint64_t state_hash() const;
    void reset_measurements();
    // When the measurements began: the world's start (WorldDef::time) or the last
    // reset_measurements(); a restored world keeps the saved world's (unit: time).
    double measured_since() const;
    // Memory of the simulation state per ball: storage, contacts, event queue, cells, handles and
    // the table of support sets (which keeps the entries of events a parallel batch undid, so
    // this may differ slightly between thread counts; the simulation does not).
    double bytes_per_ball() const;
    // Width of the spatial cells (docs/architecture.md, "Cells as wide as the balls are sparse"): at
    // least a ball's diameter, wider where balls are few and far apart; +inf where one cell holds
    // all space (at most 16 balls, not periodic); 0 without balls.
    double cell_width() const;

    // Nearest hit along the ray, exact (the ray–sphere test of the picking article).
    std::optional<RayHit> ray_cast(const Ray& ray) const;
    void ray_cast(std::span<const Ray> rays, std::span<std::optional<RayHit>> hits) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ballistic
