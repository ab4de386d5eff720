// Ballistic — regions with their own event loops (region_loop.hpp).
#include "loop/region_loop.hpp"

#include "events/measurements.hpp"
#include "base/parallel.hpp"
#include "events/response.hpp"

#include <algorithm>
#include <chrono>
#include <immintrin.h>

namespace ballistic::detail {

namespace {

constexpr std::uint64_t kNever = ~std::uint64_t{0};
// How far from the cells an event writes, in cells, it may touch what another region's events
// touch: it reads the cells around what it writes, and another region's event writes balls within
// a cell of its own and reads around them. An event writes its ball's cell and at most one next to
// it (a partner's, a crossing ball's new cell): from its ball's cell, kReach. One at a static
// writes its ball alone.
constexpr int kWriteReach = 2, kReach = kWriteReach + 1, kStaticReach = kWriteReach;
// The events that may touch what an interface event reads write cells up to kReach + 2 from
// another region: their balls lie within kReach + 3. Those stamp their cells; deeper events do not,
// and one of them that comes late goes serially.
constexpr int kStamped = kReach + 3;
// A region parks at most this many events that wait, and also those within kParkedReach cells
// of one (whatever they touch lies beyond what it touches, by a cell).
constexpr std::size_t kMostParked = 32;
constexpr std::int64_t kParkedReach = 4;
// A region publishes a rising floor after this many events (or once it passes what a neighbour waits for).
constexpr std::uint32_t kPublishEvery = 16;
constexpr std::uint32_t kCheckParkedEvery = 1;
// A region that waits spins this many times before it leaves its task (the driver starts it again).
constexpr std::uint32_t kSpins = 1u << 16;
// A region forgets the events every region has passed once this many events since the last time.
constexpr std::uint64_t kForgetEvery = 64;

void pause() { _mm_pause(); }

}  // namespace

void RegionLoop::prepare(const RegionPlan& plan, const Cells& cells) {
    plan_ = plan;
    const std::size_t n = plan.count();
    if (floors_.size() != n) {
        floors_ = std::vector<Floor>(n);
        mail_ = std::vector<Mailbox>(n);
        regions_ = std::vector<Region>(n);
        work_.assign(n, 0.0);
        acked_ = std::make_unique<std::atomic<std::uint64_t>[]>(n * n);
        for (Region& g : regions_) g.sent.assign(n, 0);
    }
    // A stamp per patch of 2 cells along each axis the plan does not cut (1 along a cut): all the
    // cells of a patch lie at one depth from the other regions, and in one block of locks, so a
    // patch is touched as its cells are; a coarser stamp only finds more events late.
    std::array<int, 3> shift;
    for (int d = 0; d < 3; ++d) shift[static_cast<std::size_t>(d)] = plan.pieces(d) > 1 ? 0 : 1;
    patches_ = cells.patches(shift);
    // A stamp of an earlier run never counts, whichever patch it now stands for: only new ones
    // start as none (filling them all took 39 ms at 10⁶ balls).
    stamps_.resize(n > 1 ? patches_.count : 0, Stamp{EventKey{}, 0});
    std::size_t blocks = 1;
    for (int d = 0; d < 3; ++d) {
        // kLockCells cells along an axis the plan cuts, and one block along the others: an
        // interface event then takes one or two locks, each a cache line that crosses between the
        // cores. Along an axis that wraps, the last block takes the cells left over (kLockCells to
        // twice that), so that the cells within two of any, across the wrap too, lie in two blocks.
        const std::int64_t along = cells.dense_cells(d);
        std::int64_t& count = blocks_[static_cast<std::size_t>(d)];
        if (n < 2) count = 0;
        else if (plan.pieces(d) < 2) count = 1;
        else if (cells.periodic() && cells.wraps(d)) count = std::max<std::int64_t>(along / kLockCells, 1);
        else count = (along + kLockCells - 1) / kLockCells;
        blocks *= static_cast<std::size_t>(count);
    }
    if (locks_.size() != blocks) locks_ = std::vector<BlockLock>(blocks);
}

EventKey RegionLoop::floor_of(std::uint32_t r, std::uint32_t* version) const {
    const Floor& f = floors_[r];
    for (;;) {
        const std::uint32_t s1 = f.seq.load(std::memory_order_acquire);
        if (s1 & 1u) {
            pause();
            continue;
        }
        const EventKey key{f.time.load(std::memory_order_relaxed), f.rest.load(std::memory_order_relaxed)};
        std::atomic_thread_fence(std::memory_order_acquire);
        if (f.seq.load(std::memory_order_relaxed) != s1) continue;
        if (version) *version = s1;
        return key;
    }
}

void RegionLoop::publish_key(std::uint32_t r, const EventKey& key) {
    Floor& f = floors_[r];
    if (f.time.load(std::memory_order_relaxed) == key.time && f.rest.load(std::memory_order_relaxed) == key.rest) return;
    const std::uint32_t s = f.seq.load(std::memory_order_relaxed);
    f.seq.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    f.time.store(key.time, std::memory_order_relaxed);
    f.rest.store(key.rest, std::memory_order_relaxed);
    f.seq.store(s + 2, std::memory_order_release);
}

void RegionLoop::publish(std::uint32_t r, bool now) {
    Region& g = regions_[r];
    EventKey floor = g.parked.empty() ? g.top : std::min(g.top, g.parked.front().key);  // parked by key
    if (!g.outstanding.empty()) {
        std::erase_if(g.outstanding, [&](const Outstanding& o) {
            return o.seq <= acked(o.to, r).load(std::memory_order_acquire);
        });
        for (const Outstanding& o : g.outstanding) floor = std::min(floor, o.key);
    }
    // A floor that drops is out at once; one that rises now and then, or once it has passed the
    // time a neighbour waits for (each publication takes its cache line from the neighbours that
    // read it, and a neighbour that waits reads it again).
    std::atomic<std::uint64_t>& wanted = mail_[r].wanted;
    const std::uint64_t awaited = wanted.load(std::memory_order_relaxed);
    const bool passed = awaited != kNever && floor.time >= awaited;
    if (!now && !(floor < g.published) && ++g.unpublished < kPublishEvery && !passed) return;
    publish_key(r, floor);
    g.published = floor;
    g.unpublished = 0;
    if (passed) wanted.store(kNever, std::memory_order_relaxed);
}

bool RegionLoop::ready(std::uint32_t r, RegionSet regions, const EventKey& key) {
    // Its own messages to them first: one not yet taken in is in no floor of theirs, and once
    // taken in, the floor read after its receipt holds it.
    for (const Outstanding& o : regions_[r].outstanding)
        if ((regions >> o.to & 1u) && o.key < key && o.seq > acked(o.to, r).load(std::memory_order_acquire))
            return false;
    for (RegionSet left = regions; left != 0; left &= left - 1) {
        const auto q = static_cast<std::uint32_t>(std::countr_zero(left));
        if (key < floor_of(q)) continue;
        // Its floor, please, once past this time (the earliest any neighbour waits for).
        std::atomic<std::uint64_t>& wanted = mail_[q].wanted;
        std::uint64_t awaited = wanted.load(std::memory_order_relaxed);
        while (key.time < awaited && !wanted.compare_exchange_weak(awaited, key.time, std::memory_order_relaxed)) {
        }
        return false;
    }
    return true;
}

bool RegionLoop::running(RegionSet regions) const {
    for (; regions != 0; regions &= regions - 1)
        if (!floors_[static_cast<std::size_t>(std::countr_zero(regions))].active.load(std::memory_order_seq_cst))
            return false;
    return true;
}

EventKey RegionLoop::top_key(std::uint32_t r, std::uint32_t& slot, Pending& event, bool& cascade) {
    if (mail_[r].mail.load(std::memory_order_acquire)) drain(r);
    Region& g = regions_[r];
    if (queue_.top_of(r, slot)) {
        event = queue_.event(slot);
        g.top = queue_.key(slot);
    } else {
        event = Pending{};
        g.top = EventKey{};
    }
    cascade = !g.cascade.empty() && !(g.top < g.cascade.front().root);
    if (cascade) {
        const Cascade& c = g.cascade.front();
        slot = c.slot;
        event = c.event;
        g.top = c.root;
    }
    publish(r);
    return g.top;
}

EventKey RegionLoop::earliest(std::uint32_t r) const {
    const Region& g = regions_[r];
    std::uint32_t slot;
    const EventKey top = queue_.top_of(r, slot) ? queue_.key(slot) : EventKey{};
    return g.cascade.empty() ? top : std::min(top, g.cascade.front().root);
}

void RegionLoop::drain(std::uint32_t r) {
    Mailbox& box = mail_[r];
    Region& g = regions_[r];
    if (!box.mail.exchange(false, std::memory_order_acq_rel)) return;
    {
        const std::lock_guard taking(box.lock);
        g.incoming.swap(box.messages);
    }
    for (const Message& m : g.incoming) {
        // The lock of its entry: an interface event of a neighbour reads the entries of the balls
        // it changes.
        Held held;
        lock_entry(cells_.key(m.slot), held);
        if (queue_.part_of(m.slot) == EventQueue::kNoPart) {
            queue_.attach(m.slot, m.event, r);
            // A parked ball's new event replaces the one parked, and one of the cascade's its event.
            std::erase_if(g.parked, [&](const Parked& p) { return p.slot == m.slot; });
            leave_cascade(r, m.slot);
        } else {
            queue_.update(m.slot, m.event);
        }
        unlock(held);
    }
    // The floor that holds them is out before their senders let them go.
    g.top = earliest(r);
    publish(r, true);
    for (const Message& m : g.incoming) acked(r, m.from).store(m.seq, std::memory_order_release);
    g.incoming.clear();
}

void RegionLoop::send(std::uint32_t from, std::uint32_t to, std::uint32_t slot, const Pending& event) {
    Region& g = regions_[from];
    const std::uint64_t seq = ++g.sent[to];
    g.outstanding.push_back({to, seq, EventKey::of(event, slot)});
    Mailbox& box = mail_[to];
    {
        const std::lock_guard lock(box.lock);
        box.messages.push_back({slot, event, from, seq});
    }
    box.mail.store(true, std::memory_order_release);
}

RegionSet RegionLoop::touches(std::uint32_t r, std::uint32_t slot, const Pending& event, int& depth,
                              bool& serial) const {
    const CellKey& cell = cells_.key(slot);
    serial = !cells_.dense_near(cell);  // a crossing out of the dense cells may rebuild the shared lists
    if (serial) return everyone(r);
    const int reach = pairwise(event.kind) || event.kind == Kind::Crossing ? kReach : kStaticReach;
    depth = plan_.depth(cell);
    if (depth > reach) return 0;
    // At kReach, only the other cell it writes can be near enough: the partner's (read as another
    // region may move it, but then it lies within a cell of that region) or the crossing's new one.
    // A partner farther than a cell (a stale event) counts as near.
    if (depth == kReach) {
        Vec3 shift;
        const CellKey other = event.kind == Kind::Crossing ? cells_.across(cell, static_cast<int>(event.other), shift)
                                                           : cells_.key_now(event.other);
        if (cells_.distance(cell, other) <= 1 && plan_.depth(other) > kWriteReach) return 0;
    }
    return plan_.near(cell, r, reach);
}

std::int64_t RegionLoop::block_along(int d, std::int64_t c) const {
    const std::int64_t n = cells_.dense_cells(d);
    std::int64_t k = c - cells_.dense_lo(d);
    if (!cells_.periodic() || !cells_.wraps(d)) k = std::clamp<std::int64_t>(k, 0, n - 1);
    else if (k < 0 || k >= n) k = ((k % n) + n) % n;  // a division only across the wrap
    return std::min(k / kLockCells, blocks_[static_cast<std::size_t>(d)] - 1);
}

std::uint32_t RegionLoop::block_of(const CellKey& cell) const {
    return static_cast<std::uint32_t>(block_along(0, cell.x) +
                                      blocks_[0] * (block_along(1, cell.y) + blocks_[1] * block_along(2, cell.z)));
}

void RegionLoop::lock_near(const CellKey& cell, const CellKey* far, Held& held) {
    held.n = 0;
    if (far == &cell) {  // the cell's own block
        held.blocks[static_cast<std::size_t>(held.n++)] = block_of(cell);
    } else {
        // The cells within two lie in at most two blocks along each axis (kLockCells >= 5).
        std::int64_t ends[3][2];
        for (int d = 0; d < 3; ++d) {
            ends[d][0] = block_along(d, cell[d] - 2);
            ends[d][1] = block_along(d, cell[d] + 2);
        }
        for (int corner = 0; corner < 8; ++corner)
            held.blocks[static_cast<std::size_t>(held.n++)] = static_cast<std::uint32_t>(
                ends[0][corner & 1] + blocks_[0] * (ends[1][corner >> 1 & 1] + blocks_[1] * ends[2][corner >> 2 & 1]));
        if (far) held.blocks[static_cast<std::size_t>(held.n++)] = block_of(*far);
    }
    auto* first = held.blocks.data();
    std::sort(first, first + held.n);
    held.n = static_cast<int>(std::unique(first, first + held.n) - first);
    for (int k = 0; k < held.n; ++k) {
        std::atomic<bool>& lock = locks_[held.blocks[static_cast<std::size_t>(k)]].held;
        while (lock.exchange(true, std::memory_order_acquire))
            while (lock.load(std::memory_order_relaxed)) pause();
    }
}

void RegionLoop::unlock(Held& held) {
    for (int k = 0; k < held.n; ++k) locks_[held.blocks[static_cast<std::size_t>(k)]].held.store(false, std::memory_order_release);
    held.n = 0;
}

bool RegionLoop::late(std::uint32_t r, const EventKey& key, const Pending& event, const Outcome& out, bool interface,
                      int depth, bool far) const {
    const Region& g = regions_[r];
    // A stale event wrote nothing of its partner, but read its counter: of a partner farther than
    // the cells around, where nothing may stamp, its own time tells.
    if (far && response_.changed_since(event.other, event.time)) return true;
    // Only an interface event may come after a later event of another region. The cells it reads
    // are stamped by every event; deeper cells only while events are parked.
    const bool own_later = key < g.latest;
    if (depth <= kStamped - 3) {
        if (!interface && !own_later) return false;
    } else {
        if (!own_later) return false;
        if (key < g.unstamped) return true;
    }
    bool later = false;
    auto newer = [&](const Stamp& stamp) { return stamp.run == run_ && key < stamp.key; };
    auto around = [&](const CellKey& cell) {
        // Another region's events write cells of this one only next to it (depth 1): around a
        // cell of its own two deep or more, only its own later events can have written.
        if (!own_later && plan_.region_of(cell) == r && plan_.depth(cell) >= 3) return;
        cells_.for_each_patch_near(cell, patches_, [&](std::size_t c) { later = later || newer(stamps_[c]); });
    };
    for (int k = 0; k < out.n_saved; ++k) around(cells_.key(out.saved[static_cast<std::size_t>(k)].slot));
    if (out.crossing) around(out.old_key);
    return later;
}

void RegionLoop::stamp(const Logged& logged) {
    const Outcome& out = logged.out;
    auto put = [&](const CellKey& cell) { stamps_[cells_.patch_of(cell, patches_)] = {logged.key, run_}; };
    for (int k = 0; k < out.n_saved; ++k) put(cells_.key(out.saved[static_cast<std::size_t>(k)].slot));
    if (out.crossing) put(out.old_key);
}

void RegionLoop::forget_final(std::uint32_t r) {
    // The least floor at one instant: two reads of every floor that agree. Every event not yet
    // processed, and every message on its way, is in some floor, so none that a stop could undo
    // comes before it.
    const auto n = static_cast<std::uint32_t>(plan_.count());
    EventKey final;
    std::uint32_t versions[RegionPlan::kMostRegions];
    for (std::uint32_t b = 0; b < n; ++b) final = std::min(final, floor_of(b, &versions[b]));
    for (std::uint32_t b = 0; b < n; ++b) {
        std::uint32_t again;
        floor_of(b, &again);
        if (again != versions[b]) return;  // it moved: another time
    }
    Region& g = regions_[r];
    while (!g.log.empty() && g.log.front().key < final) {
        g.counts.last = std::max(g.counts.last, g.log.front().out.time);
        g.log.pop_front();
    }
}

void RegionLoop::request_stop(const EventKey& key, End why) {
    const std::lock_guard lock(stop_lock_);
    // An interruption or a failure outranks a limit, which outranks an event for the serial loop.
    if (why == End::Interrupted || why_ == End::Reached || (why == End::Limit && why_ == End::Serial)) why_ = why;
    const std::uint64_t t = stop_time_.load(std::memory_order_relaxed);
    stop_time_.store(std::min(t, key.time), std::memory_order_seq_cst);
}

RegionLoop::Step RegionLoop::run_region(std::uint32_t r, double end, std::uint64_t limit,
                                        const std::atomic<bool>* interrupt) {
    Region& g = regions_[r];
    Mailbox& box = mail_[r];
    Floor& floor = floors_[r];
    floor.active.store(true, std::memory_order_seq_cst);
    using Clock = std::chrono::steady_clock;
    struct Leave {  // the loop stops running; its time less its waits was its own work
        Floor& floor;
        double& work;
        Clock::time_point began = Clock::now(), waiting{};
        bool waits = false;
        void wait() {
            if (!waits) waiting = Clock::now();
            waits = true;
        }
        void go() {
            if (waits) began += Clock::now() - waiting;
            waits = false;
        }
        ~Leave() {
            go();
            work += std::chrono::duration<double>(Clock::now() - began).count();
            floor.active.store(false, std::memory_order_seq_cst);
        }
    } leave{floor, work_[r]};
    std::uint64_t since_forget = 0;
    Held held;  // the locks it holds
    std::uint32_t spin = 0;
    try {
        for (;;) {
            if (stop_time_.load(std::memory_order_relaxed) != kNever) return Step::Parked;
            // The parked events are looked at while it waits, and every few events otherwise.
            if (!g.parked.empty() && (spin > 0 || ++g.unchecked == kCheckParkedEvery)) {
                g.unchecked = 0;
                if (unpark_ready(r)) spin = 0;
            }
            std::uint32_t s = 0;
            Pending event;
            bool cascade = false;
            const EventKey key = top_key(r, s, event, cascade);
            const bool none = !(event.time <= end);
            if (none && g.parked.empty()) {
                publish(r, true);
                return Step::Done;
            }
            if (stops_at(r, key, limit, interrupt)) return Step::Parked;
            bool serial = false;
            int depth = 0;
            RegionSet near = 0;
            bool wait = none;  // only parked events are left
            if (!none) {
                near = touches(r, s, event, depth, serial);
                if (serial) {
                    request_stop(key, End::Serial);
                    return Step::Parked;
                }
                // It waits until the regions it touches have passed its key, and so does one near
                // an event waiting so. Meanwhile its region goes on with its later events farther
                // away: it parks the waiting events, while it has room.
                if ((near != 0 && !ready(r, near, key)) || beside_parked(r, s, depth, key)) {
                    if (!cascade && park(r, s, event, key, near, depth)) continue;
                    wait = true;
                }
            }
            if (wait) {
                leave.wait();
                if (!wait_once(r, spin)) return Step::Blocked;
                continue;
            }
            leave.go();
            spin = 0;
            response_.prefetch_next(queue_, r);  // the likely next event's balls load meanwhile
            if (near != 0) {
                lock_near(cells_.key(s), nullptr, held);
                // A neighbour's event before this one may have sent a new event of its ball: its
                // message is in the mailbox before the neighbour lets its locks go.
                if (box.mail.load(std::memory_order_acquire)) {
                    unlock(held);
                    continue;
                }
            }
            // Back in the queue while it is processed, as any event. Its entry needs no lock of its
            // own: near another region its locks are held already, and deeper in no other region
            // reads it.
            if (cascade) {
                g.cascade.erase(g.cascade.begin());
                queue_.attach(s, event, r);
            }
            if (!process(r, s, event, key, near != 0, depth)) {
                unlock(held);
                request_stop(key, End::Serial);
                return Step::Parked;
            }
            unlock(held);
            if (near != 0) ++g.run_interface;
            queue_.warm(r);
            if (++since_forget == kForgetEvery) {
                since_forget = 0;
                forget_final(r);
            }
        }
    } catch (...) {
        unlock(held);
        keep_error(r);
        return Step::Parked;
    }
}

void RegionLoop::keep_error(std::uint32_t r) {
    {
        const std::lock_guard lock(stop_lock_);
        if (!error_) error_ = std::current_exception();
    }
    request_stop(floor_of(r), End::Interrupted);
}

bool RegionLoop::stops_at(std::uint32_t r, const EventKey& key, std::uint64_t limit, const std::atomic<bool>* interrupt) {
    if (limit != 0 && regions_[r].run_processed >= limit) {
        request_stop(key, End::Limit);
        return true;
    }
    if (interrupt && interrupt->load(std::memory_order_relaxed)) {
        request_stop(key, End::Interrupted);
        return true;
    }
    return false;
}

bool RegionLoop::wait_once(std::uint32_t r, std::uint32_t& spin) {
    // Its own mail may bring an earlier event; a neighbour whose loop is not running cannot move
    // on: then the task ends, and the driver starts it again.
    if (mail_[r].mail.load(std::memory_order_acquire)) return true;
    publish(r, true);  // the neighbours it waits for may wait for it
    if (++spin == kSpins || !running(everyone(r))) return false;
    pause();
    return true;
}

bool RegionLoop::park(std::uint32_t r, std::uint32_t slot, const Pending& event, const EventKey& key, RegionSet near,
                      int depth) {
    Region& g = regions_[r];
    if (g.parked.size() >= kMostParked) return false;
    const auto at = std::upper_bound(g.parked.begin(), g.parked.end(), key,
                                     [](const EventKey& k, const Parked& p) { return k < p.key; });
    g.parked_depth = g.parked.empty() ? depth : std::max(g.parked_depth, depth);
    g.parked.insert(at, {slot, event, key, near, cells_.key(slot)});
    Held entry;
    lock_entry(cells_.key(slot), entry);
    queue_.detach(slot);
    unlock(entry);
    return true;
}

bool RegionLoop::process(std::uint32_t r, std::uint32_t s, const Pending& event, const EventKey& key, bool interface,
                         int depth) {
    Region& g = regions_[r];
    // A partner within a cell lies among the cells it holds (or its own region's, deeper in). One
    // farther may be changing meanwhile: only its counter and time are read. Not stale and that
    // far, the event would touch what another region's events may touch without their knowing:
    // serially, then.
    const bool far = pairwise(event.kind) && cells_.distance(cells_.key(s), cells_.key_now(event.other)) > 1;
    if (far && !response_.stale(s, event)) return false;
    Logged& logged = g.log.emplace_back();
    logged.key = key;
    Outcome& out = logged.out;
    out.clear();
    try {
        response_.compute(s, event, out);
    } catch (...) {
        response_.undo(out);
        g.log.pop_back();
        throw;
    }
    // An event it creates at its instant with a key before this one's (in a jam) joins the
    // cascade: serially it comes next, before every other. One for a ball of another region (or
    // parked, or on its way) would have to go there: serially, then. And did an event with a
    // later key, of its own region or another, touch what this one touches? Serially, then.
    bool earlier = false;
    for (int k = 0; k < out.n_requeue; ++k) {
        const auto i = static_cast<std::size_t>(k);
        const std::uint32_t slot = out.requeue[i];
        if (!cascades(out, i, key)) continue;
        const std::uint32_t part = queue_.part_of(slot);
        const bool own = plan_.region_of(cells_.key(slot)) == r &&
                         (part == r || (part == EventQueue::kNoPart && in_cascade(r, slot)));
        earlier = earlier || !own;
    }
    if (earlier || late(r, key, event, out, interface, depth, far)) {
        response_.undo(out);
        g.log.pop_back();
        return false;
    }
    try {
        if (out.collided) g.records.push({key, out.event, out.virial, out.overlap});
        if (out.woken != Outcome::kNoBall && def_.sleep_interval > 0.0) g.woken.push({key, out.woken});
    } catch (...) {
        response_.undo(out);
        g.log.pop_back();
        throw;
    }
    // The cells an interface event reads are stamped by every event; deeper ones only while events
    // are parked, the time its region runs ahead of their keys.
    if (depth <= kStamped || !g.parked.empty()) stamp(logged);
    else g.unstamped = std::max(g.unstamped, key);
    g.latest = std::max(g.latest, key);
    ++g.run_processed;
    ++g.counts.processed;
    if (out.crossing) ++g.counts.crossings;
    pass_on(r, logged);
    return true;
}

void RegionLoop::pass_on(std::uint32_t r, Logged& logged) {
    const Outcome& out = logged.out;
    for (int k = 0; k < out.n_requeue; ++k) {
        const auto i = static_cast<std::size_t>(k);
        const std::uint32_t slot = out.requeue[i];
        const Pending& next = out.next[i];
        const std::uint32_t part = queue_.part_of(slot);
        logged.previous[i] = queue_.event(slot);
        logged.part[i] = part;
        // To the region of its cell: a neighbour's ball (perhaps on its way there from another
        // one), or one of its own that crossed over.
        const std::uint32_t to = plan_.region_of(cells_.key(slot));
        // A ball of the cascade whose event this one replaces leaves it.
        const bool cascaded = part == EventQueue::kNoPart && leave_cascade(r, slot);
        if (cascades(out, i, logged.key)) {
            if (part == r) queue_.detach(slot);
            join_cascade(r, {slot, next, EventKey::of(next, slot), logged.key});
        } else if (to == r && (part == r || cascaded)) {
            if (part == r) queue_.update(slot, next);
            else queue_.attach(slot, next, r);
        } else {
            if (part == r) queue_.detach(slot);
            send(r, to, slot, next);
        }
    }
}

bool RegionLoop::in_cascade(std::uint32_t r, std::uint32_t slot) const {
    const auto& cascade = regions_[r].cascade;
    return std::any_of(cascade.begin(), cascade.end(), [&](const Cascade& c) { return c.slot == slot; });
}

bool RegionLoop::leave_cascade(std::uint32_t r, std::uint32_t slot) {
    return std::erase_if(regions_[r].cascade, [&](const Cascade& c) { return c.slot == slot; }) > 0;
}

void RegionLoop::join_cascade(std::uint32_t r, const Cascade& joining) {
    auto& cascade = regions_[r].cascade;
    // In the serial order: by its root's key, then by its own.
    const auto at = std::upper_bound(cascade.begin(), cascade.end(), joining, [](const Cascade& a, const Cascade& b) {
        return a.root < b.root || (a.root == b.root && a.key < b.key);
    });
    cascade.insert(at, joining);
}

bool RegionLoop::beside_parked(std::uint32_t r, std::uint32_t slot, int depth, const EventKey& key) const {
    const Region& g = regions_[r];
    // Depths differ by no more than the cells between: one deeper than every parked event's by
    // more than kParkedReach is beside none.
    if (g.parked.empty() || depth > g.parked_depth + kParkedReach) return false;
    const CellKey& cell = cells_.key(slot);
    for (const Parked& p : g.parked) {
        if (!(p.key < key)) return false;  // by key
        if (cells_.distance(cell, p.cell) <= kParkedReach) return true;
    }
    return false;
}

bool RegionLoop::unpark_ready(std::uint32_t r) {
    Region& g = regions_[r];
    // The earliest first, while they may go: one parked beside an earlier one may once that one
    // has (the queue gives them in key order).
    std::size_t ready_ones = 0;
    while (ready_ones < g.parked.size()) {
        const Parked& p = g.parked[ready_ones];
        if (p.near != 0 && !ready(r, p.near, p.key)) break;
        Held entry;
        lock_entry(cells_.key(p.slot), entry);
        queue_.attach(p.slot, p.event, r);
        unlock(entry);
        ++ready_ones;
    }
    g.parked.erase(g.parked.begin(), g.parked.begin() + static_cast<std::ptrdiff_t>(ready_ones));
    return ready_ones > 0;
}

void RegionLoop::undo(Logged& logged, bool queue) {
    Outcome& out = logged.out;
    response_.undo(out);
    if (!queue) return;
    for (int k = out.n_requeue; k-- > 0;) {
        const auto i = static_cast<std::size_t>(k);
        const std::uint32_t slot = out.requeue[i];
        // A ball parked or on its way then: back in the region of its cell.
        const std::uint32_t part = logged.part[i] != EventQueue::kNoPart ? logged.part[i] : plan_.region_of(cells_.key(slot));
        const std::uint32_t now = queue_.part_of(slot);
        const Pending& previous = logged.previous[i];
        if (now == EventQueue::kNoPart) queue_.attach(slot, previous, part);
        else if (now == part) queue_.update(slot, previous);
        else queue_.update(slot, previous, part);
    }
}

void RegionLoop::undo_to_prefix() {
    const auto n = static_cast<std::uint32_t>(plan_.count());
    // After a failure the queue is built again: only the balls are put back, and the floors, which
    // hold the messages on their way, give the prefix.
    const bool queue = !error_;
    EventKey prefix;
    if (queue) {
        for (std::uint32_t r = 0; r < n; ++r) {
            drain(r);
            for (const Parked& p : regions_[r].parked) queue_.attach(p.slot, p.event, r);
            regions_[r].parked.clear();
        }
        for (std::uint32_t r = 0; r < n; ++r) {
            regions_[r].outstanding.clear();
            regions_[r].top = earliest(r);
            prefix = std::min(prefix, regions_[r].top);
        }
    } else {
        for (std::uint32_t r = 0; r < n; ++r) {
            prefix = std::min(prefix, floor_of(r));
            regions_[r].parked.clear();
        }
    }
    // Every logged event at or after the prefix, the latest first across the regions. A region's
    // log is in the order it processed its events, which is not always theirs: a neighbour's
    // message may bring an event earlier than some it has processed (that touch nothing the same,
    // or it would have come late).
    struct Entry {
        EventKey key;
        Region* region;
        std::size_t index;
    };
    // Events of one key (a ball in a jam meets the same body again at the same instant) are one
    // ball's, in one region: the latest processed is undone first.
    std::vector<Entry> late;
    for (Region& g : regions_)
        for (std::size_t k = g.log.size(); k-- > 0;)
            if (!(g.log[k].key < prefix)) late.push_back({g.log[k].key, &g, k});
    std::stable_sort(late.begin(), late.end(), [](const Entry& a, const Entry& b) { return b.key < a.key; });
    for (const Entry& e : late) {
        Logged& logged = e.region->log[e.index];
        undo(logged, queue);
        --e.region->counts.processed;
        ++e.region->counts.undone;
        if (logged.out.crossing) --e.region->counts.crossings;
    }
    for (Region& g : regions_) {
        g.log.drop_from(prefix);
        g.cascade.clear();  // its events' roots were undone, and with them the events
        g.records.erase_from(prefix);
        g.woken.erase_from(prefix);
    }
}

template <class Item, class Fn>
void RegionLoop::in_key_order(ByKey<Item> Region::*list, Fn&& fn) {
    // Two sources per region: the items that came in key order, then the late ones, sorted. Of
    // two equal keys, the first source's came first (ByKey::push()). The sources' fronts go in a
    // heap, the earliest key on top and of two equal keys the earlier source's: the order of one
    // stable sort of every region's items, as they came, one region after the other. The top's
    // next item takes its place and sinks: with two regions, one comparison per item.
    struct Front {
        const Item* at;
        const Item* end;
        std::uint32_t source;
    };
    auto before = [](const Front& a, const Front& b) {
        return a.at->key < b.at->key || (!(b.at->key < a.at->key) && a.source < b.source);
    };
    std::array<Front, 2 * RegionPlan::kMostRegions> heap;
    std::size_t n = 0;
    for (std::uint32_t s = 0; s < 2 * regions_.size(); ++s) {
        ByKey<Item>& items = regions_[s / 2].*list;
        std::vector<Item>& from = s % 2 == 0 ? items.in_order : items.late;
        if (s % 2 == 1)
            std::stable_sort(from.begin(), from.end(), [](const Item& a, const Item& b) { return a.key < b.key; });
        if (!from.empty()) heap[n++] = {from.data(), from.data() + from.size(), s};
    }
    const auto first = heap.begin(), last = heap.begin() + static_cast<std::ptrdiff_t>(n);
    std::make_heap(first, last, [&](const Front& a, const Front& b) { return before(b, a); });
    while (n > 0) {
        fn(*heap[0].at);
        Front top = heap[0];
        if (++top.at == top.end) {
            if (--n == 0) break;
            top = heap[n];
        }
        std::size_t i = 0;
        for (std::size_t child = 1; child < n; child = 2 * i + 1) {
            if (child + 1 < n && before(heap[child + 1], heap[child])) ++child;
            if (!before(heap[child], top)) break;
            heap[i] = heap[child];
            i = child;
        }
        heap[i] = top;
    }
}

RegionLoop::End RegionLoop::run(double end, std::uint64_t limit, const std::atomic<bool>* interrupt,
                                Measurements& measurements, std::size_t record_limit,
                                std::vector<std::uint32_t>& woken, Counts& counts) {
    const auto n = static_cast<std::uint32_t>(plan_.count());
    const std::uint64_t cap = limit == 0 ? 0 : limit / n;  // so that together they never pass it
    stop_time_.store(kNever);
    why_ = End::Reached;
    error_ = nullptr;
    for (std::uint32_t r = 0; r < n; ++r) {
        Region& g = regions_[r];
        g.run_processed = g.run_interface = 0;
        g.counts = {};
        g.latest = EventKey::none();
        g.unstamped = EventKey::none();
        work_[r] = 0.0;
        g.top = earliest(r);
        publish(r, true);
    }
    if (++run_ == 0) {  // its count wrapped: the stamps of long ago would look new
        std::fill(stamps_.begin(), stamps_.end(), Stamp{EventKey{}, 0});
        run_ = 1;
    }
    std::vector<Step> steps(n);
    const auto began = std::chrono::steady_clock::now();
    for (;;) {
        parallel_.for_each(n, [&](std::size_t r) { steps[r] = run_region(static_cast<std::uint32_t>(r), end, cap, interrupt); });
        if (stop_time_.load() != kNever) break;
        bool done = true;
        for (std::uint32_t r = 0; r < n; ++r) done = done && steps[r] == Step::Done && !mail_[r].mail.load();
        if (done) break;
    }
    counts.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    counts.busiest = *std::max_element(work_.begin(), work_.end());
    End why = End::Reached;
    if (stop_time_.load() != kNever) {
        why = why_;
        undo_to_prefix();
    }
    // What the regions did, counted first: should the lists below fail to grow, the caller knows
    // where the world stands, and only the measurements miss this run's collisions.
    for (Region& g : regions_) {
        counts.processed += g.counts.processed;
        counts.crossings += g.counts.crossings;
        counts.undone += g.counts.undone;
        counts.interface += g.run_interface;
        if (g.run_processed > counts.span) {
            counts.span = g.run_processed;
            counts.span_interface = g.run_interface;
        }
        counts.last = std::max(counts.last, g.counts.last);
        for (std::size_t k = 0; k < g.log.size(); ++k) counts.last = std::max(counts.last, g.log[k].out.time);
        g.log.clear();
        g.outstanding.clear();
    }
    try {
        in_key_order(&Region::woken, [&](const Woken& w) { woken.push_back(w.slot); });
        std::size_t collisions = 0;
        for (const Region& g : regions_) collisions += g.records.size();
        measurements.room_for(collisions, record_limit);
        in_key_order(&Region::records,
                     [&](const Collided& c) { measurements.count(c.event, c.virial, c.overlap, record_limit); });
        for (Region& g : regions_) {
            g.records.clear();
            g.woken.clear();
        }
    } catch (...) {
        for (Region& g : regions_) {
            g.records.clear();
            g.woken.clear();
        }
        throw;
    }
    if (error_) std::rethrow_exception(error_);
    return why;
}

}  // namespace ballistic::detail
