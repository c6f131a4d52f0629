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
// whole call's work, as given to useful_workers (about FLOPs): with it the pool keeps a call on the caller
// when its helpers sleep and waking them would cost more than they could take off (better_on_caller).
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

// Whether a call is better left on the caller while its helpers sleep, from what earlier calls measured. Alone
// it takes work / rate µs (rate: the caller's work per µs in calls that woke no one). Split, the caller spends
// notify_us waking the helpers, works alone until they get going wake_us after the job was published (the
// notification included), and shares what is left, every worker at woken_rate (the caller's rate in calls that
// woke sleeping helpers: lower than `rate` where a wake-up disturbs the waker, as on a virtual machine):
// wake + (work / woken_rate - (wake - notify)) / threads. Kept when that is no shorter than alone. False while
// anything is unmeasured (0) or for one thread.
bool better_on_caller(double work, unsigned threads, double rate, double woken_rate, double wake_us, double notify_us);
// After this many calls in a row kept on the caller, the next splits all the same, so that the wake-up keeps
// being measured: an estimate left too high (a pool's first wake-ups are slow) would otherwise stay.
inline constexpr unsigned kMostKeptInARow = 16;

// Workers worth waking for a call of `tasks` tasks and `work` FLOPs in all (about; the same figure the call then
// gives parallel_for): every worker should get at least min_work_per_worker(), so small calls stay on the calling
// thread (waking a sleeping thread costs the caller tens of µs, and the thread may get going only some hundred µs
// later: better_on_caller).
unsigned useful_workers(unsigned threads, std::size_t tasks, double work);

// For tests: the least work worth a worker (1e6 FLOPs by default; 0 wakes every thread for any call, so the
// golden fixtures, all tiny, run split), and how many tasks helper threads (not callers) have run so far.
void set_min_work_per_worker(double flops);
double min_work_per_worker();
std::uint64_t helper_tasks_run();
// For tests: how many calls the pool kept on the caller by better_on_caller, whether every helper a call of
// `threads` threads would use sleeps now, and a measured wake-up to start from (as if earlier calls had measured
// it) so that the rule can be seen to act.
std::uint64_t calls_kept_on_caller();
bool helpers_asleep(unsigned threads);
void set_wake_measures_for_tests(double rate, double woken_rate, double wake_us, double notify_us);
// For tests: every worker a run wakes takes part — the caller waits until each helper has joined, and worker w
// runs the first task of its range before anyone else may — so that a test of a split run never passes because
// the caller happened to do it all (on a loaded machine a sleeping helper can wake after a small run is over).
void set_every_worker_takes_part(bool on);

// Bytes from one worker's scratch to the next: whole cache lines, so workers never share one.
inline std::uint64_t worker_stride(std::uint64_t bytes) { return (bytes + 63) / 64 * 64; }

}  // namespace xattn::kernels
