// A fixed set of tasks run on up to `threads` threads, the caller among them (worker 0). Which worker
// runs which task varies from run to run: kernels give each worker its own scratch (worker index) and
// make every task's result independent of who computes it, so results do not depend on the thread count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xattn::kernels {

using TaskFn = void (*)(void* context, std::size_t task, unsigned worker);

// Runs fn(context, t, worker) for every t in [0, tasks) and returns when all have finished. Never throws;
// tasks must not throw either. Called from inside a task it runs the tasks on the calling thread.
void parallel_run(std::size_t tasks, unsigned threads, TaskFn fn, void* context);

template <class F>
void parallel_for(std::size_t tasks, unsigned threads, const F& f) {
    if (threads <= 1 || tasks <= 1) {
        for (std::size_t t = 0; t < tasks; ++t) f(t, 0u);
        return;
    }
    parallel_run(tasks, threads,
                 [](void* c, std::size_t t, unsigned worker) { (*static_cast<const F*>(c))(t, worker); },
                 const_cast<F*>(&f));
}

// Workers worth waking for `tasks` tasks of about `work_per_task` FLOPs each: every worker should get at least
// min_work_per_worker(), so small calls stay on the calling thread (waking a sleeping thread costs ~10-50 µs).
unsigned useful_workers(unsigned threads, std::size_t tasks, double work_per_task);

// For tests: the least work worth a worker (1e6 FLOPs by default; 0 wakes every thread for any call, so the
// golden fixtures, all tiny, run split), and how many tasks helper threads (not callers) have run so far.
void set_min_work_per_worker(double flops);
double min_work_per_worker();
std::uint64_t helper_tasks_run();
// For tests: every worker a run wakes takes part — the caller waits until each helper has joined and worker w
// runs task w first — so that a test of a split run never passes because the caller happened to do it all
// (on a loaded machine a sleeping helper can wake after a small run is over).
void set_every_worker_takes_part(bool on);

// Bytes from one worker's scratch to the next: whole cache lines, so workers never share one.
inline std::uint64_t worker_stride(std::uint64_t bytes) { return (bytes + 63) / 64 * 64; }

}  // namespace xattn::kernels
