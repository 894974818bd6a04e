/* test_thread_pool.cpp: the pool runs every task exactly once, and idle workers stop spinning
 * (they sleep, so an idle engine holds no core the HTTP side needs). */
#include <unistd.h>

#include <atomic>
#include <vector>

#include "../src/thread_pool.h"
#include "test.h"

using namespace maya;

static void count_task(void *arg, int task, int) { ((std::atomic<int> *)arg)[task].fetch_add(1); }

TEST(thread_pool_runs_each_task_once_then_sleeps_when_idle) {
    ThreadPool pool;
    CHECK(pool.start(3) == 0);
    for (int n : {1, 2, 7, 100}) {
        std::vector<std::atomic<int>> hits((size_t)n);
        for (auto &h : hits) h = 0;
        pool.run(n, count_task, hits.data());
        for (int i = 0; i < n; i++) CHECK(hits[(size_t)i].load() == 1);
    }
    // Both workers give up spinning and sleep (polled; the bound only ends a hang).
    int waited_ms = 0;
    while (pool.n_sleeping() < 2 && waited_ms < 10000) {
        usleep(1000);
        waited_ms++;
    }
    CHECK_MSG(pool.n_sleeping() == 2, "%d of 2 workers asleep", pool.n_sleeping());
    // A sleeping pool still wakes for the next loop.
    std::vector<std::atomic<int>> hits(50);
    for (auto &h : hits) h = 0;
    pool.run(50, count_task, hits.data());
    for (auto &h : hits) CHECK(h.load() == 1);
}

struct OrderLog {
    int n, lanes;
    std::atomic<int> hits[1000];
    std::atomic<int> last_own[8]; // per worker: the last task taken from its own share, -1 none
    std::atomic<int> out_of_order[8];
};

static void log_task(void *arg, int task, int worker) {
    OrderLog &o = *(OrderLog *)arg;
    o.hits[task].fetch_add(1);
    int lane = worker % o.lanes, lo = o.n * lane / o.lanes, hi = o.n * (lane + 1) / o.lanes;
    if (task < lo || task >= hi) return; // taken from another share (from its back)
    int prev = o.last_own[worker].exchange(task);
    if (prev >= 0 && task <= prev) o.out_of_order[worker].fetch_add(1);
}

TEST(thread_pool_contiguous_loops_run_each_task_once_in_order_per_share) {
    // 4 threads on however many cores: some workers join late or never, and their shares are
    // taken from the back by the others; every task still runs exactly once, and a thread walks
    // its own share forward.
    for (int threads : {2, 4}) {
        ThreadPool pool;
        CHECK(pool.start(threads) == 0);
        for (int n : {1, 3, 7, 8, 100, 1000}) {
            for (int rep = 0; rep < 20; rep++) {
                static OrderLog o;
                o.n = n;
                o.lanes = threads;
                for (auto &h : o.hits) h = 0;
                for (int w = 0; w < 8; w++) o.last_own[w] = -1, o.out_of_order[w] = 0;
                pool.run(n, log_task, &o, true);
                for (int i = 0; i < n; i++)
                    CHECK_MSG(o.hits[i].load() == 1, "n %d task %d ran %d times", n, i, o.hits[i].load());
                for (int i = n; i < 1000; i++) CHECK(o.hits[i].load() == 0);
                if (n >= 2 * threads)
                    for (int w = 0; w < threads; w++) CHECK_MSG(o.out_of_order[w].load() == 0, "worker %d", w);
            }
        }
    }
}
