// Ballistic — the task system the engine runs its parallel phases on.
//
// A world runs on oneTBB by default. An embedder can hand it their own job system instead (or a
// serial one) by implementing TaskSystem and setting WorldDef::task_system. Results are
// bit-identical for every task system and every concurrency: the engine cuts work into pieces
// that depend only on the amount of work, and combines their results in a fixed order.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace ballistic {

// A non-owning reference to a callable `void(std::size_t)`, valid during the call it is passed to.
class TaskFunction {
public:
    template <class Fn>
        requires(!std::is_same_v<std::remove_cvref_t<Fn>, TaskFunction>)
    TaskFunction(Fn&& fn) noexcept  // NOLINT: implicit, like std::function_ref
        : object_(const_cast<void*>(static_cast<const void*>(&fn))),
          call_([](void* object, std::size_t k) { (*static_cast<std::remove_reference_t<Fn>*>(object))(k); }) {}
    void operator()(std::size_t k) const { call_(object_, k); }

private:
    void* object_;
    void (*call_)(void*, std::size_t);
};

class TaskSystem {
public:
    virtual ~TaskSystem() = default;
    // How many tasks may run at once (>= 1). The engine sizes its pieces of work by it; results
    // never depend on it.
    virtual int concurrency() const = 0;
    // Runs task(k) exactly once for every k in [0, count), in any order, on any threads, and
    // returns when every task has returned. If tasks throw, rethrows one of their exceptions
    // once none is running. run() is called from several threads at once when they read one
    // world (or step different worlds) together, and never from inside a task.
    virtual void run(std::size_t count, TaskFunction task) = 0;
};

// oneTBB, in an arena of `threads` threads (0: every hardware thread).
std::shared_ptr<TaskSystem> make_tbb_task_system(int threads = 0);
// Every task in order on the calling thread.
std::shared_ptr<TaskSystem> make_serial_task_system();

}  // namespace ballistic
