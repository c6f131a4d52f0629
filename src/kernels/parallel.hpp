// A fixed set of tasks run on up to `threads` threads, the caller among them (worker 0). Each worker starts
// on its own contiguous range of the tasks and then takes what is left of the others', so which worker runs
// which task varies from run to run: kernels give each worker its own scratch (worker index) and make every
// task's result independent of who computes it, so results do not depend on the thread count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xattn::kernels {

using TaskFn = void (*)(void* context, std::size_t task, unsigned worker);

// Runs fn(context, t, worker) for every t in [0, tasks) and returns when all have finished. Never throws;
// tasks must not throw either. Called from inside a task it runs the tasks on the calling thread. `work` is the
// whole call's work (about FLOPs), as given to useful_workers.
void parallel_run(std::size_t tasks, unsigned threads, double work, TaskFn fn, void* context);

template <class F>
void parallel_for(std::size_t tasks, unsigned threads, double work, const F& f) {
    if (threads <= 1 || tasks <= 1) {
        for (std::size_t t = 0; t < tasks; ++t) f(t, 0u);
        return;
    }
    parallel_run(tasks, threads, work,
                 [](void* c, std::size_t t, unsigned worker) { (*static_cast<const F*>(c))(t, worker); },
                 const_cast<F*>(&f));
}

// The least work (about FLOPs) worth a worker: waking a sleeping thread costs the caller tens of µs, and the
// thread may get going only some hundred µs later, so a call splits only as far as each worker gets this much.
inline constexpr double kMinWorkPerWorker = 1.0e6;

// Workers worth waking for a call of `tasks` tasks and `work` FLOPs in all (the same figure the call then gives
// parallel_for): every worker gets at least min_work_per_worker(), so small calls stay on the calling thread.
unsigned useful_workers(unsigned threads, std::size_t tasks, double work);
double min_work_per_worker();

#ifdef XATTN_TESTING
// A testing build's settings and counters (the doctest suite, the fuzzers, the wasm testing build):
//   set_min_work_per_worker  the least work worth a worker (0 wakes every thread for any call, so that the
//                            golden fixtures, all tiny, run split); kMinWorkPerWorker by default
//   helper_tasks_run         how many tasks helper threads (not callers) have run so far
//   helpers_asleep           whether every helper a call of `threads` threads would use sleeps now
//   set_every_worker_takes_part  every worker a run wakes takes part: the caller waits until each helper has
//                            joined, and worker w runs the first task of its range before anyone else may, so that
//                            a test of a split run never passes because the caller happened to do it all
void set_min_work_per_worker(double flops);
std::uint64_t helper_tasks_run();
bool helpers_asleep(unsigned threads);
void set_every_worker_takes_part(bool on);
#endif

// Bytes from one worker's scratch to the next: whole cache lines, so workers never share one.
inline std::uint64_t worker_stride(std::uint64_t bytes) { return (bytes + 63) / 64 * 64; }

}  // namespace xattn::kernels
