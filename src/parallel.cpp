// The thread pool behind kernels::parallel_run and the process-wide thread count (xattn/threads.hpp).
//
// Helpers are started on first use; after a call each polls for the next one for spin_microseconds(), then
// sleeps on a condition variable. A call publishes its job, wakes the helpers it needs, works on the tasks itself
// as worker 0, and then waits for the helpers by spinning on a counter: a browser's main thread may not block
// (Atomics.wait throws there), and the wait is short, since every worker takes tasks from one shared counter
// until none is left. How many helpers a call wakes depends on its work alone (useful_workers), never on
// timings, so the same call always splits the same way.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "kernels/parallel.hpp"
#include "xattn/threads.hpp"

#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#define XATTN_HAS_THREADS 0
#else
#define XATTN_HAS_THREADS 1
#include <condition_variable>
#include <thread>
#include <vector>
#endif

// The threaded wasm build passes its worker pool size + 1 (threads cannot be started while a browser's main
// thread waits, so they all come from the pool Emscripten fills at load time).
#ifndef XATTN_MAX_THREADS
#define XATTN_MAX_THREADS 64
#endif

namespace xattn {
namespace kernels {
void start_helpers(unsigned helpers);  // below, beside the pool
}
namespace {

// The default count, as the JS package's: up to 4 threads, no more than the machine's cores.
unsigned default_threads() {
#if XATTN_HAS_THREADS && !defined(__EMSCRIPTEN__)
    const unsigned cores = std::thread::hardware_concurrency();
    return std::min(kDefaultMaxThreads, std::max(1u, cores));
#else
    return 1;  // a wasm build's count is set by the JS package when it starts the module
#endif
}

// The count, set to the default on first use: a static initializer of the program's may plan a call (or ask
// num_threads()) before this file's own would have run.
std::atomic<unsigned>& threads_in_force() {
    static std::atomic<unsigned> n{default_threads()};
    return n;
}
std::atomic<unsigned> g_spin_us{kDefaultSpinMicroseconds};

}  // namespace

unsigned set_spin_microseconds(unsigned us) {
    const unsigned clamped = us > kMaxSpinMicroseconds ? kMaxSpinMicroseconds : us;
    g_spin_us.store(clamped, std::memory_order_relaxed);
    return clamped;
}

unsigned spin_microseconds() { return g_spin_us.load(std::memory_order_relaxed); }

unsigned max_threads() { return XATTN_HAS_THREADS ? XATTN_MAX_THREADS : 1; }

unsigned set_num_threads(unsigned n) {
    const unsigned clamped = n < 1 ? 1 : n > max_threads() ? max_threads() : n;
    kernels::start_helpers(clamped - 1);
    threads_in_force().store(clamped, std::memory_order_relaxed);
    return clamped;
}

unsigned num_threads() { return threads_in_force().load(std::memory_order_relaxed); }

}  // namespace xattn

namespace xattn::kernels {

#ifdef XATTN_TESTING
namespace {
std::atomic<double> g_min_work{kMinWorkPerWorker};
std::atomic<std::uint64_t> g_helper_tasks{0};
std::atomic<bool> g_every_worker{false};
}  // namespace

void set_every_worker_takes_part(bool on) { g_every_worker.store(on, std::memory_order_relaxed); }
void set_min_work_per_worker(double flops) { g_min_work.store(flops < 0.0 ? 0.0 : flops, std::memory_order_relaxed); }
double min_work_per_worker() { return g_min_work.load(std::memory_order_relaxed); }
std::uint64_t helper_tasks_run() { return g_helper_tasks.load(std::memory_order_relaxed); }
namespace {
[[maybe_unused]] bool every_worker_takes_part() { return g_every_worker.load(std::memory_order_relaxed); }
[[maybe_unused]] void count_helper_tasks(std::size_t n) { g_helper_tasks.fetch_add(n, std::memory_order_relaxed); }
}  // namespace
#else
double min_work_per_worker() { return kMinWorkPerWorker; }
namespace {
[[maybe_unused]] constexpr bool every_worker_takes_part() { return false; }
[[maybe_unused]] void count_helper_tasks(std::size_t) {}
}  // namespace
#endif

unsigned useful_workers(unsigned threads, std::size_t tasks, double work) {
    unsigned n = threads < 1 ? 1 : threads;
    const double least = min_work_per_worker();
    if (least > 0.0) {
        const double by_work = work / least;
        if (static_cast<double>(n) > by_work) n = by_work < 1.0 ? 1u : static_cast<unsigned>(by_work);
    }
    if (n > tasks) n = tasks == 0 ? 1u : static_cast<unsigned>(tasks);
    return n;
}

#if !XATTN_HAS_THREADS

void parallel_run(std::size_t tasks, unsigned, double, TaskFn fn, void* context) {
    for (std::size_t t = 0; t < tasks; ++t) fn(context, t, 0);
}

void start_helpers(unsigned) {}
#ifdef XATTN_TESTING
bool helpers_asleep(unsigned) { return false; }
#endif

#else

namespace {

thread_local bool t_in_task = false;  // a task that calls parallel_run runs the inner tasks itself

// A call's job is open to helpers until the caller has seen every task taken; then it is closed, and the caller
// waits only for the helpers that joined in time. A helper woken late finds it closed and goes back to sleep,
// so the caller never waits for a wake-up it did not need (in a browser that can take a good part of a small
// call). `state_` packs the job's generation (high 32 bits), the closed flag and the helpers inside it.
class Pool {
public:
    ~Pool() {
        stopping_.store(true, std::memory_order_relaxed);  // a polling helper stops polling
        {
            std::lock_guard<std::mutex> lock(mu_);
            stop_ = true;
        }
        wake_.notify_all();
        for (std::thread& t : helpers_) t.join();
    }

    void run(std::size_t tasks, unsigned threads, TaskFn fn, void* context) {
        std::lock_guard<std::mutex> one_call(call_mu_);  // calls from different threads take turns
        const unsigned helpers = threads - 1;
        const bool every = every_worker_takes_part();
        {
            std::lock_guard<std::mutex> lock(mu_);
            start(helpers);
            fn_ = fn, context_ = context, tasks_ = tasks, job_helpers_ = helpers, every_ = every;
            // With every_, worker w runs the first task of its range before the others may take from it.
            for (unsigned r = 0; r < threads; ++r)
                next_[r].v.store(every && range_begin(r, tasks, threads) < range_begin(r + 1, tasks, threads) ? 1 : 0,
                                 std::memory_order_relaxed);
            joined_.store(0, std::memory_order_relaxed);
            const std::uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
            state_.store(generation << 32, std::memory_order_relaxed);
            generation_.store(generation, std::memory_order_release);
        }
        wake_.notify_all();
        // (joined_, not the helpers inside: a helper may join, finish and leave before this thread looks.)
        if (every)
            while (joined_.load(std::memory_order_acquire) < helpers) std::this_thread::yield();
        work_on(0, fn, context, tasks, every, threads);
        state_.fetch_or(kClosed, std::memory_order_acq_rel);
        while ((state_.load(std::memory_order_acquire) & kInside) != 0) std::this_thread::yield();
    }

    // Starts helpers up to `helpers` now, rather than on the first call that needs them: their stacks come out
    // of the heap, so a caller measuring memory sees it taken once, when the count is set.
    void ensure(unsigned helpers) {
        std::lock_guard<std::mutex> lock(mu_);
        start(helpers);
    }

private:
    static constexpr std::uint64_t kInside = 0xffff, kClosed = 0x10000;
    // Whether helpers 1..helpers (bits 0..helpers-1 of asleep_) all sleep now.
    bool all_asleep(unsigned helpers) const {
        const std::uint64_t needed = helpers >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << helpers) - 1;
        return (asleep_.load(std::memory_order_acquire) & needed) == needed;
    }
    // With mu_ held. Returns once every helper runs: a thread's start-up allocates a little (its thread-local
    // data), and it should do so now, not in the middle of a later call.
    void start(unsigned helpers) {
        while (helpers_.size() < helpers) {
            const unsigned index = static_cast<unsigned>(helpers_.size()) + 1;
            helpers_.emplace_back([this, index] { helper_loop(index); });
        }
        while (running_.load(std::memory_order_acquire) < helpers_.size()) std::this_thread::yield();
    }

    // Worker r's range of a job of `tasks` tasks over `workers` workers: [range_begin(r), range_begin(r + 1)).
    static std::size_t range_begin(unsigned r, std::size_t tasks, unsigned workers) {
        return static_cast<std::size_t>(static_cast<std::uint64_t>(tasks) * r / workers);
    }

    // Each worker takes the tasks of its own range in order, then those left in the others' ranges, so that
    // neighbouring tasks, which share their inputs (the query blocks of one problem read the same keys and
    // values), mostly run on one core. With one counter for all tasks the workers took turns along the list, and
    // each read nearly every problem's keys and values, which a JS caller has just copied into wasm memory on its
    // own core. Two-thread SDPA calls were faster with ranges, never slower (the two builds timed interleaved in
    // one process). Returns the tasks it ran.
    std::size_t work_on(unsigned worker, TaskFn fn, void* context, std::size_t tasks, bool every, unsigned workers) {
        t_in_task = true;
        std::size_t ran = 0;
        const std::size_t own = range_begin(worker, tasks, workers);
        if (every && own < range_begin(worker + 1, tasks, workers)) fn(context, own, worker), ++ran;
        for (unsigned k = 0; k < workers; ++k) {
            const unsigned r = (worker + k) % workers;
            const std::size_t begin = range_begin(r, tasks, workers), end = range_begin(r + 1, tasks, workers);
            for (std::size_t t; (t = begin + next_[r].v.fetch_add(1, std::memory_order_relaxed)) < end; ++ran)
                fn(context, t, worker);
        }
        t_in_task = false;
        if (worker != 0) count_helper_tasks(ran);
        return ran;
    }

    // Joins job `generation` unless it is closed (or already another one).
    bool enter(std::uint64_t generation) {
        std::uint64_t s = state_.load(std::memory_order_acquire);
        for (;;) {
            if ((s >> 32) != (generation & 0xffffffffu) || (s & kClosed)) return false;
            if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) return true;
        }
    }

    void helper_loop(unsigned index) {
        running_.fetch_add(1, std::memory_order_release);
        const std::uint64_t bit = std::uint64_t{1} << (index - 1);  // in asleep_
        std::uint64_t seen = 0;
        for (;;) {
            // Poll for the next job for spin_microseconds() (xattn/threads.hpp): back-to-back calls (a projection,
            // then attention; a JS caller's copy-in, run, copy-out, next call) then find the helper awake. Read
            // as it polls, so that lowering it sends a polling helper to sleep at once.
            const auto from = std::chrono::steady_clock::now();
            for (unsigned i = 1; generation_.load(std::memory_order_acquire) == seen &&
                                 !stopping_.load(std::memory_order_relaxed);
                 ++i)
                if (i % 256 == 0 &&
                    std::chrono::steady_clock::now() - from > std::chrono::microseconds(spin_microseconds()))
                    break;
            TaskFn fn;
            void* context;
            std::size_t tasks;
            bool every;
            unsigned workers;
            std::uint64_t generation;
            {
                std::unique_lock<std::mutex> lock(mu_);
                const auto called = [&] {
                    return stop_ || (generation_.load(std::memory_order_relaxed) != seen && index <= job_helpers_);
                };
                if (!called()) {
                    asleep_.fetch_or(bit, std::memory_order_release);
                    wake_.wait(lock, called);
                    asleep_.fetch_and(~bit, std::memory_order_release);
                }
                if (stop_) return;
                generation = seen = generation_.load(std::memory_order_relaxed);
                fn = fn_, context = context_, tasks = tasks_, every = every_, workers = job_helpers_ + 1;
            }
            if (!enter(generation)) continue;
            joined_.fetch_add(1, std::memory_order_release);
            work_on(index, fn, context, tasks, every, workers);
            state_.fetch_sub(1, std::memory_order_acq_rel);
        }
    }

    std::mutex call_mu_;
    std::mutex mu_;
    std::condition_variable wake_;
    std::vector<std::thread> helpers_;
    bool stop_ = false;
    std::atomic<bool> stopping_{false};  // stop_, for helpers that poll without mu_
    std::atomic<std::uint64_t> generation_{0};
    TaskFn fn_ = nullptr;
    void* context_ = nullptr;
    std::size_t tasks_ = 0;
    unsigned job_helpers_ = 0;
    bool every_ = false;  // set_every_worker_takes_part when the job was published
    // The next task of each worker's range, as an offset from its start; a line each, as every worker claims
    // from its own at once.
    struct alignas(64) Counter {
        std::atomic<std::size_t> v{0};
    };
    Counter next_[XATTN_MAX_THREADS];
    std::atomic<std::uint64_t> state_{0};
    std::atomic<std::size_t> running_{0};  // helpers that have started
    std::atomic<unsigned> joined_{0};      // helpers that have joined the current job
    // Bit index - 1 is set while helper `index` waits on wake_.
    std::atomic<std::uint64_t> asleep_{0};

#ifdef XATTN_TESTING
    friend bool xattn::kernels::helpers_asleep(unsigned);
#endif
};

Pool& pool() {
    static Pool p;
    return p;
}

}  // namespace

void start_helpers(unsigned helpers) {
    if (helpers > 0) pool().ensure(helpers);
}

void parallel_run(std::size_t tasks, unsigned threads, double, TaskFn fn, void* context) {
    if (threads > max_threads()) threads = max_threads();
    if (threads > tasks) threads = static_cast<unsigned>(tasks);
    if (threads <= 1 || t_in_task) {
        for (std::size_t t = 0; t < tasks; ++t) fn(context, t, 0);
        return;
    }
    pool().run(tasks, threads, fn, context);
}

#ifdef XATTN_TESTING
bool helpers_asleep(unsigned threads) {
    if (threads > max_threads()) threads = max_threads();
    return threads > 1 && pool().all_asleep(threads - 1);
}
#endif

#endif

}  // namespace xattn::kernels
