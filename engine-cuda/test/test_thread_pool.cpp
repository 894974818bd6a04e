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
