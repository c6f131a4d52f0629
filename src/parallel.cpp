// The thread pool behind kernels::parallel_run and the process-wide thread count (xattn/threads.hpp).
//
// Helpers are started on first use and then sleep on a condition variable between calls. A call publishes
// its job, wakes the helpers it needs, works on the tasks itself as worker 0, and then waits for the helpers
// by spinning on a counter: a browser's main thread may not block (Atomics.wait throws there), and the
// wait is short, since every worker takes tasks from one shared counter until none is left.
#include <atomic>
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
namespace {

std::atomic<unsigned> g_threads{1};

}  // namespace

unsigned max_threads() { return XATTN_HAS_THREADS ? XATTN_MAX_THREADS : 1; }

unsigned set_num_threads(unsigned n) {
    const unsigned clamped = n < 1 ? 1 : n > max_threads() ? max_threads() : n;
    g_threads.store(clamped, std::memory_order_relaxed);
    return clamped;
}

unsigned num_threads() { return g_threads.load(std::memory_order_relaxed); }

}  // namespace xattn

namespace xattn::kernels {

namespace {
std::atomic<double> g_min_work{1.0e6};
std::atomic<std::uint64_t> g_helper_tasks{0};
}  // namespace

void set_min_work_per_worker(double flops) { g_min_work.store(flops < 0.0 ? 0.0 : flops, std::memory_order_relaxed); }
double min_work_per_worker() { return g_min_work.load(std::memory_order_relaxed); }
std::uint64_t helper_tasks_run() { return g_helper_tasks.load(std::memory_order_relaxed); }

unsigned useful_workers(unsigned threads, std::size_t tasks, double work_per_task) {
    unsigned n = threads < 1 ? 1 : threads;
    const double least = min_work_per_worker();
    if (least > 0.0) {
        const double by_work = static_cast<double>(tasks) * work_per_task / least;
        if (static_cast<double>(n) > by_work) n = by_work < 1.0 ? 1u : static_cast<unsigned>(by_work);
    }
    if (n > tasks) n = tasks == 0 ? 1u : static_cast<unsigned>(tasks);
    return n;
}

#if !XATTN_HAS_THREADS

void parallel_run(std::size_t tasks, unsigned, TaskFn fn, void* context) {
    for (std::size_t t = 0; t < tasks; ++t) fn(context, t, 0);
}

#else

namespace {

thread_local bool t_in_task = false;  // a task that calls parallel_run runs the inner tasks itself

class Pool {
public:
    ~Pool() {
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
        {
            std::lock_guard<std::mutex> lock(mu_);
            while (helpers_.size() < helpers) {
                const unsigned index = static_cast<unsigned>(helpers_.size()) + 1;
                helpers_.emplace_back([this, index] { helper_loop(index); });
            }
            fn_ = fn, context_ = context, tasks_ = tasks, job_helpers_ = helpers;
            next_.store(0, std::memory_order_relaxed);
            busy_.store(helpers, std::memory_order_relaxed);
            ++generation_;
        }
        wake_.notify_all();
        work(0, fn, context, tasks);
        while (busy_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    }

private:
    void work(unsigned worker, TaskFn fn, void* context, std::size_t tasks) {
        t_in_task = true;
        std::uint64_t ran = 0;
        for (std::size_t t; (t = next_.fetch_add(1, std::memory_order_relaxed)) < tasks; ++ran) fn(context, t, worker);
        t_in_task = false;
        if (worker != 0) g_helper_tasks.fetch_add(ran, std::memory_order_relaxed);
    }

    void helper_loop(unsigned index) {
        std::uint64_t seen = 0;
        for (;;) {
            TaskFn fn;
            void* context;
            std::size_t tasks;
            {
                std::unique_lock<std::mutex> lock(mu_);
                wake_.wait(lock, [&] { return stop_ || (generation_ != seen && index <= job_helpers_); });
                if (stop_) return;
                seen = generation_;
                fn = fn_, context = context_, tasks = tasks_;
            }
            work(index, fn, context, tasks);
            busy_.fetch_sub(1, std::memory_order_release);
        }
    }

    std::mutex call_mu_;
    std::mutex mu_;
    std::condition_variable wake_;
    std::vector<std::thread> helpers_;
    bool stop_ = false;
    std::uint64_t generation_ = 0;
    TaskFn fn_ = nullptr;
    void* context_ = nullptr;
    std::size_t tasks_ = 0;
    unsigned job_helpers_ = 0;
    std::atomic<std::size_t> next_{0};
    std::atomic<unsigned> busy_{0};
};

Pool& pool() {
    static Pool p;
    return p;
}

}  // namespace

void parallel_run(std::size_t tasks, unsigned threads, TaskFn fn, void* context) {
    if (threads > max_threads()) threads = max_threads();
    if (threads > tasks) threads = static_cast<unsigned>(tasks);
    if (threads <= 1 || t_in_task) {
        for (std::size_t t = 0; t < tasks; ++t) fn(context, t, 0);
        return;
    }
    pool().run(tasks, threads, fn, context);
}

#endif

}  // namespace xattn::kernels
