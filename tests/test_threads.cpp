// Threads (xattn/threads.hpp): every result is bit-identical at 1, 2, 3 and 4 threads, on the golden
// fixtures (forced to split however small they are) and on problems big enough to split on their own;
// and helper threads really do run tasks, so these comparisons could fail.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>


#include "golden.hpp"
#include "kernels/kernels.hpp"
#include "kernels/parallel.hpp"
#include "random_inputs.hpp"

namespace {

// Sets the thread count (and, for tiny fixtures, the least work worth a helper) for one scope.
// Both are read when a call plans, so they stay fixed while it runs.
struct Threads {
    Threads(unsigned n, bool force_split) : saved_work(xattn::kernels::min_work_per_worker()) {
        REQUIRE(xattn::set_num_threads(n) == n);
        if (force_split) xattn::kernels::set_min_work_per_worker(0.0);
        // Every helper a run wakes takes part, so a split run is tested as one even on a loaded machine.
        xattn::kernels::set_every_worker_takes_part(true);
    }
    ~Threads() {
        xattn::set_num_threads(1);
        xattn::kernels::set_min_work_per_worker(saved_work);
        xattn::kernels::set_every_worker_takes_part(false);
    }
    double saved_work;
};

constexpr unsigned kCounts[] = {2, 3, 4};

bool same_bits(const xt::xarray<float>& a, const xt::xarray<float>& b) {
    // memcmp must not see the null data of an empty array (no weights asked for).
    return a.shape() == b.shape() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Runs `compute` (returning a list of arrays) at 1 thread and at 2, 3 and 4; every array must match bit for bit.
// Problems big enough to split on their own must also have handed tasks to helper threads (every worker a run wakes
// takes part while these tests run); the fixture tests count them over all fixtures, some of which have one task.
template <class F>
void check_same_at_every_count(const std::string& label, bool force_split, const F& compute) {
    std::vector<xt::xarray<float>> one;
    {
        Threads t(1, force_split);
        one = compute();
    }
    for (const unsigned n : kCounts) {
        const std::uint64_t before = xattn::kernels::helper_tasks_run();
        std::vector<xt::xarray<float>> got;
        {
            Threads t(n, force_split);
            got = compute();
        }
        REQUIRE(got.size() == one.size());
        for (std::size_t i = 0; i < got.size(); ++i)
            CHECK_MESSAGE(same_bits(got[i], one[i]), label << ": result " << i << " differs at " << n << " threads");
        if (!force_split)
            CHECK_MESSAGE(xattn::kernels::helper_tasks_run() > before, label << ": no helper ran a task at " << n << " threads");
    }
}

using test_inputs::randn;

// The count this process started with, read while the program starts, before any test sets one.
const unsigned threads_at_start = xattn::num_threads();

}  // namespace

TEST_CASE("threads: a process starts at min(4, its cores) threads, the default the JS package takes too") {
    CHECK(xattn::kDefaultMaxThreads == 4);  // js/boundary-schema.js's DEFAULT_MAX_THREADS is generated from it
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    CHECK(threads_at_start == std::min(4u, cores));
}

TEST_CASE("threads: the count is clamped to [1, max_threads()] and read back") {
    CHECK(xattn::max_threads() >= 4);
    CHECK(xattn::set_num_threads(0) == 1);
    CHECK(xattn::num_threads() == 1);
    CHECK(xattn::set_num_threads(xattn::max_threads() + 5) == xattn::max_threads());
    CHECK(xattn::set_num_threads(3) == 3);
    CHECK(xattn::num_threads() == 3);
    xattn::set_num_threads(1);
}

TEST_CASE("threads: every sdpa fixture is bit-identical at 1-4 threads and still matches PyTorch") {
    const std::uint64_t before = xattn::kernels::helper_tasks_run();
    for (const golden::Case& c : golden::cases("sdpa.txt")) {
        const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32();
        const xattn::SdpaOptions o = golden::sdpa_options(c);
        check_same_at_every_count(c.name, true, [&] {
            const auto r = xattn::scaled_dot_product_attention(q, k, v, o);
            CHECK_CLOSE(r.output, c.at("output"), c.name + " output at " + std::to_string(xattn::num_threads()));
            return std::vector<xt::xarray<float>>{r.output, r.weights};
        });
    }
    CHECK(xattn::kernels::helper_tasks_run() > before);
}

TEST_CASE("threads: every rules fixture (window, soft-cap, ALiBi, key lengths, scores) is bit-identical at 1-4 threads") {
    for (const golden::Case& c : golden::cases("sdpa_rules.txt")) {
        const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32();
        xattn::SdpaOptions o = golden::sdpa_options(c);
        for (bool weights : {false, true}) {
            o.need_weights = weights;
            check_same_at_every_count(c.name, true, [&] {
                const auto r = xattn::scaled_dot_product_attention(q, k, v, o);
                return std::vector<xt::xarray<float>>{r.output, r.weights, r.scores};
            });
        }
    }
    for (const golden::Case& c : golden::cases("sdpa_rules_grad.txt")) {
        const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32();
        const auto dO = c.at("grad_output").f32();
        const xattn::SdpaOptions o = golden::sdpa_options(c);
        check_same_at_every_count(c.name + " backward", true, [&] {
            const auto r = xattn::scaled_dot_product_attention_backward(q, k, v, dO, o);
            return std::vector<xt::xarray<float>>{r.output, r.grad_query, r.grad_key, r.grad_value};
        });
    }
}

TEST_CASE("threads: every sdpa gradient fixture is bit-identical at 1-4 threads") {
    const std::uint64_t before = xattn::kernels::helper_tasks_run();
    for (const golden::Case& c : golden::cases("sdpa_grad.txt")) {
        const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32();
        const auto dO = c.at("grad_output").f32();
        const xattn::SdpaOptions o = golden::sdpa_options(c);
        // A fixture with a single key/value problem has one backward task; its forward still splits.
        check_same_at_every_count(c.name, true, [&] {
            const auto r = xattn::scaled_dot_product_attention_backward(q, k, v, dO, o);
            CHECK_GRAD(r.grad_key, c.at("grad_key"), c.name + " grad_key");
            return std::vector<xt::xarray<float>>{r.output, r.grad_query, r.grad_key, r.grad_value};
        });
    }
    CHECK(xattn::kernels::helper_tasks_run() > before);
}

TEST_CASE("threads: every mha fixture, forward and backward, is bit-identical at 1-4 threads") {
    const std::uint64_t before = xattn::kernels::helper_tasks_run();
    for (const golden::Case& c : golden::cases("mha.txt")) {
        const xattn::MultiheadAttention mha = golden::make_mha(c);
        const xattn::MhaForwardOptions o = golden::mha_options(c);
        check_same_at_every_count(c.name, true, [&] {
            const auto r = mha.forward(c.at("query").f32(), c.at("key").f32(), c.at("value").f32(), o);
            CHECK_CLOSE(r.output, c.at("output"), c.name + " output");
            return std::vector<xt::xarray<float>>{r.output, r.weights};
        });
    }
    for (const golden::Case& c : golden::cases("mha_grad.txt")) {
        const xattn::MultiheadAttention mha = golden::make_mha(c);
        const xattn::MhaForwardOptions o = golden::mha_options(c);
        check_same_at_every_count(c.name, true, [&] {
            const auto r = mha.backward(c.at("query").f32(), c.at("key").f32(), c.at("value").f32(),
                                        c.at("grad_output").f32(), o);
            std::vector<xt::xarray<float>> all{r.output, r.grad_query, r.grad_key, r.grad_value};
            for (const auto& [name, g] : r.grad_parameters) all.push_back(g);
            return all;
        });
    }
    CHECK(xattn::kernels::helper_tasks_run() > before);
}

TEST_CASE("threads: big enough problems split on their own, forward, weights and backward") {
    const auto q = randn({2, 4, 300, 64}, 1), k = randn({2, 4, 257, 64}, 2), v = randn({2, 4, 257, 48}, 3);
    const auto dO = randn({2, 4, 300, 48}, 4);
    for (const bool causal : {false, true}) {
        xattn::SdpaOptions o;
        o.is_causal = causal;
        o.causal_alignment = xattn::CausalAlignment::bottom_right;
        check_same_at_every_count(causal ? "causal" : "full", false, [&] {
            const auto r = xattn::scaled_dot_product_attention(q, k, v, o);
            const auto g = xattn::scaled_dot_product_attention_backward(q, k, v, dO, o);
            return std::vector<xt::xarray<float>>{r.output, g.output, g.grad_query, g.grad_key, g.grad_value};
        });
        o.need_weights = true;
        check_same_at_every_count(causal ? "causal weights" : "weights", false, [&] {
            const auto r = xattn::scaled_dot_product_attention(q, k, v, o);
            return std::vector<xt::xarray<float>>{r.output, r.weights};
        });
    }
}

TEST_CASE("threads: a backward with few key/value problems splits the keys, adds the chunks' dQ in order") {
    // One key/value head shared by 4 query heads, 1500 keys: 3 chunks of key tiles, each with its dK, dV rows.
    // The chunks depend on S alone. 140 queries are whole query groups (of 16 or 32, by kernel set) and a
    // tail of 12; with the causal rule (bottom-right) row i sees keys up to 1360 + i, so the last chunk still has a
    // tile the first groups skip. (With 300 queries the float64 reference took 90 s of the AddressSanitizer run.)
    const auto q = randn({1, 4, 140, 32}, 11), k = randn({1, 1, 1500, 32}, 12), v = randn({1, 1, 1500, 24}, 13);
    const auto dO = randn({1, 4, 140, 24}, 14);
    for (const bool causal : {false, true}) {
        xattn::SdpaOptions o;
        o.enable_gqa = true;
        o.is_causal = causal;
        o.causal_alignment = xattn::CausalAlignment::bottom_right;
        check_same_at_every_count(causal ? "split backward, causal" : "split backward", false, [&] {
            const auto g = xattn::scaled_dot_product_attention_backward(q, k, v, dO, o);
            return std::vector<xt::xarray<float>>{g.output, g.grad_query, g.grad_key, g.grad_value};
        });
        const auto want = xattn::reference_sdpa_backward(q, k, v, dO, o);
        Threads t(3, false);
        const auto got = xattn::scaled_dot_product_attention_backward(q, k, v, dO, o);
        CHECK_GRAD(got.grad_query, want.grad_query, "split backward grad_query");
        CHECK_GRAD(got.grad_key, want.grad_key, "split backward grad_key");
        CHECK_GRAD(got.grad_value, want.grad_value, "split backward grad_value");
    }
}

TEST_CASE("threads: a decoding step splits the keys and merges the chunks in order (flash decoding)") {
    // One key/value head, so only the key chunks can spread over threads; 5000 positions make 5 chunks.
    for (const xattn::CacheDtype dtype : {xattn::CacheDtype::float32, xattn::CacheDtype::float16}) {
        xattn::KvCacheConfig cfg;
        cfg.kv_heads = 1, cfg.head_dim = 64, cfg.capacity = 5000, cfg.dtype = dtype;
        xattn::KvCache cache(cfg);
        const auto k = randn({1, 1, 5000, 64}, 5), v = randn({1, 1, 5000, 64}, 6), q = randn({1, 4, 1, 64}, 7);
        cache.append(k, v);
        // Ten steps: one step is five small tasks, which the calling thread may finish before a sleeping helper
        // wakes; a helper that has just run polls for the next call, so it takes part in the later ones.
        check_same_at_every_count("decode", false, [&] {
            std::vector<xt::xarray<float>> steps;
            for (int i = 0; i < 10; ++i) steps.push_back(cache.attend(q).output);
            return steps;
        });
        // And the merged chunks are the attention of the held keys and values.
        xattn::SdpaOptions o;
        o.enable_gqa = true;
        const auto want = xattn::reference_sdpa(q, cache.keys(), cache.values(), o).output;
        Threads t(4, false);
        CHECK_CLOSE(cache.attend(q).output, want, "decode at 4 threads vs the reference");
    }
}

TEST_CASE("threads: every task runs once, each worker from the start of its own range of the tasks") {
    // Ranges of tasks · r / workers; with every worker taking part, worker w runs its range's first task before
    // anyone else may, and nothing else is fixed (the rest go to whoever claims them first, stealing included).
    for (const unsigned n : kCounts) {
        Threads t(n, true);
        for (const std::size_t tasks : std::vector<std::size_t>{3, 4, 5, 7, 64, 97}) {
            if (tasks < n) continue;  // a call never wakes more workers than it has tasks
            std::vector<std::atomic<int>> runs(tasks);
            std::vector<std::atomic<int>> first_by(tasks);
            for (auto& f : first_by) f.store(-1);
            std::vector<std::atomic<bool>> started(n);  // worker w has run a task
            xattn::kernels::parallel_for(tasks, n, 0.0, [&](std::size_t task, unsigned worker) {
                runs[task].fetch_add(1);
                if (!started[worker].exchange(true)) first_by[task].store(static_cast<int>(worker));
            });
            for (std::size_t task = 0; task < tasks; ++task)
                CHECK_MESSAGE(runs[task].load() == 1, "task " << task << " of " << tasks << " at " << n);
            for (unsigned w = 0; w < n; ++w) {
                const std::size_t own = tasks * w / n;
                CHECK_MESSAGE(first_by[own].load() == static_cast<int>(w),
                              "worker " << w << " did not start on task " << own << " of " << tasks << " at " << n);
            }
        }
    }
}

TEST_CASE("threads: calls from several threads at once take turns and give the same results") {
    const auto q = randn({4, 200, 32}, 8), k = randn({4, 300, 32}, 9), v = randn({4, 300, 32}, 10);
    Threads t(2, false);
    const auto want = xattn::scaled_dot_product_attention(q, k, v, {}).output;
    std::vector<xt::xarray<float>> got(3);
    std::vector<std::thread> callers;
    for (std::size_t i = 0; i < got.size(); ++i)
        callers.emplace_back([&, i] { got[i] = xattn::scaled_dot_product_attention(q, k, v, {}).output; });
    for (std::thread& c : callers) c.join();
    for (const auto& g : got) CHECK(same_bits(g, want));
}

TEST_CASE("threads: helpers poll for the set time after a call, then sleep; lowering it sends them to sleep") {
    CHECK(xattn::spin_microseconds() == xattn::kDefaultSpinMicroseconds);
    CHECK(xattn::set_spin_microseconds(xattn::kMaxSpinMicroseconds + 1) == xattn::kMaxSpinMicroseconds);
    CHECK(xattn::spin_microseconds() == xattn::kMaxSpinMicroseconds);
    {
        Threads t(2, true);  // every helper a call wakes takes part
        std::atomic<unsigned> ran{0};
        xattn::kernels::parallel_for(2, 2, 0.0, [&](std::size_t, unsigned) { ran.fetch_add(1); });
        REQUIRE(ran.load() == 2);
        // Polling for a second: still awake well after the call, where the default 200 µs would have let it sleep.
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        CHECK_FALSE(xattn::kernels::helpers_asleep(2));
        // Lowered to 0, the polling helper sleeps now, not at the end of its second (begun 30 ms and more ago).
        const auto lowered = std::chrono::steady_clock::now();
        CHECK(xattn::set_spin_microseconds(0) == 0);
        while (!xattn::kernels::helpers_asleep(2) && std::chrono::steady_clock::now() - lowered < std::chrono::seconds(5))
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        CHECK(xattn::kernels::helpers_asleep(2));
        CHECK(std::chrono::steady_clock::now() - lowered < std::chrono::milliseconds(800));
    }
    xattn::set_spin_microseconds(xattn::kDefaultSpinMicroseconds);
}

TEST_CASE("threads: the same bits whether the helpers poll between calls or sleep (late joiners included)") {
    // With no polling every call finds its helper asleep; the calling thread often finishes a small call before the
    // helper wakes, closes the job, and the helper goes back to sleep. With a second of polling the helper is there
    // at once. Neither may change a bit; under ThreadSanitizer this drives the late-join path call after call.
    xattn::KvCacheConfig cfg;
    cfg.kv_heads = 2, cfg.head_dim = 32, cfg.capacity = 3000;
    xattn::KvCache cache(cfg);
    cache.append(randn({1, 2, 3000, 32}, 14), randn({1, 2, 3000, 32}, 15));
    const auto q = randn({1, 6, 1, 32}, 16), sq = randn({3, 40, 32}, 17), sk = randn({3, 70, 32}, 18);
    xt::xarray<float> want_step, want_sdpa;
    {
        Threads one(1, false);
        want_step = cache.attend(q).output;
        want_sdpa = xattn::scaled_dot_product_attention(sq, sk, sk, {}).output;
    }
    const double saved_work = xattn::kernels::min_work_per_worker();
    REQUIRE(xattn::set_num_threads(2) == 2);
    xattn::kernels::set_min_work_per_worker(0.0);  // every call splits; the helper joins only if it wakes in time
    const std::uint64_t before = xattn::kernels::helper_tasks_run();
    for (const unsigned spin : {0u, xattn::kMaxSpinMicroseconds}) {
        xattn::set_spin_microseconds(spin);
        // 40 calls each way; while polling, more until the helper has run a task, which on a host busy with other
        // work can take its scheduler a while (bounded: a helper that never joins still fails the check below).
        const auto joined = [&] { return xattn::kernels::helper_tasks_run() > before; };
        for (int i = 0; i < 40 || (spin != 0 && !joined() && i < 4000); ++i) {
            CHECK_MESSAGE(same_bits(cache.attend(q).output, want_step), "step " << i << ", polling " << spin << " us");
            CHECK_MESSAGE(same_bits(xattn::scaled_dot_product_attention(sq, sk, sk, {}).output, want_sdpa),
                          "sdpa " << i << ", polling " << spin << " us");
        }
    }
    CHECK(xattn::kernels::helper_tasks_run() > before);
    xattn::set_spin_microseconds(xattn::kDefaultSpinMicroseconds);  // the helper sleeps now, not a second from now
    xattn::kernels::set_min_work_per_worker(saved_work);
    xattn::set_num_threads(1);
}
