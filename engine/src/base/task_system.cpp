// Ballistic — the task systems the engine provides (ballistic/task_system.hpp).
#include <ballistic/task_system.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

namespace ballistic {
namespace {

class SerialTaskSystem final : public TaskSystem {
public:
    int concurrency() const override { return 1; }
    void run(std::size_t count, TaskFunction task) override {
        for (std::size_t k = 0; k < count; ++k) task(k);
    }
};

class TbbTaskSystem final : public TaskSystem {
public:
    explicit TbbTaskSystem(int threads) : arena_(threads > 0 ? threads : tbb::task_arena::automatic) {
        arena_.initialize();
    }
    int concurrency() const override { return arena_.max_concurrency(); }
    void run(std::size_t count, TaskFunction task) override {
        arena_.execute([&] {
            tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, 1), [&](const tbb::blocked_range<std::size_t>& r) {
                for (std::size_t k = r.begin(); k != r.end(); ++k) task(k);
            });
        });
    }

private:
    tbb::task_arena arena_;
};

}  // namespace

std::shared_ptr<TaskSystem> make_tbb_task_system(int threads) {
    if (threads == 1) return make_serial_task_system();
    return std::make_shared<TbbTaskSystem>(threads);
}

std::shared_ptr<TaskSystem> make_serial_task_system() { return std::make_shared<SerialTaskSystem>(); }

}  // namespace ballistic
