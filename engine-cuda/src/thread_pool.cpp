/* thread_pool.cpp: spin-then-sleep workers over a generation counter (see thread_pool.h). */
#include "thread_pool.h"

#include "common.h" // defines: fail

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

namespace maya {

// Spin iterations before sleeping: ~tens of microseconds, longer than the gap between two
// matmuls of one step, much shorter than the gap between steps.
static const int kSpinIters = 20000;

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        is_stopping_.store(true, std::memory_order_release);
        generation_.fetch_add(1, std::memory_order_release);
    }
    cv_start_.notify_all();
    for (auto &t : workers_) t.join();
}

int32_t ThreadPool::start(int n_threads) {
    n_threads_ = n_threads < 1 ? 1 : n_threads;
    try {
        for (int i = 1; i < n_threads_; i++) workers_.emplace_back(&ThreadPool::worker_main, this, i);
    } catch (...) {
        n_threads_ = 1 + (int)workers_.size();
        return fail(ENG_STATUS_OUT_OF_MEMORY, "cannot start worker threads");
    }
    return ENG_STATUS_OK;
}

void ThreadPool::drain(int worker) {
    while (true) {
        int task = next_task_.fetch_add(1, std::memory_order_relaxed);
        if (task >= n_tasks_) break;
        fn_(arg_, task, worker);
    }
}

void ThreadPool::worker_main(int worker) {
    uint64_t seen = 0;
    while (true) {
        int spins = 0;
        while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinIters) {
            CPU_RELAX();
            spins++;
        }
        if (generation_.load(std::memory_order_acquire) == seen) {
            std::unique_lock<std::mutex> lock(mu_);
            cv_start_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        }
        seen = generation_.load(std::memory_order_acquire);
        if (is_stopping_.load(std::memory_order_acquire)) return;
        drain(worker);
        if (n_busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard<std::mutex> lock(mu_);
            cv_done_.notify_one();
        }
    }
}

void ThreadPool::run(int n_tasks, TaskFn fn, void *arg) {
    if (n_tasks <= 0) return;
    if (n_threads_ == 1 || n_tasks == 1) {
        for (int i = 0; i < n_tasks; i++) fn(arg, i, 0);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        fn_ = fn;
        arg_ = arg;
        n_tasks_ = n_tasks;
        next_task_.store(0, std::memory_order_relaxed);
        n_busy_.store(n_threads_ - 1, std::memory_order_relaxed);
        generation_.fetch_add(1, std::memory_order_release);
    }
    cv_start_.notify_all();
    drain(0);
    int spins = 0;
    while (n_busy_.load(std::memory_order_acquire) != 0 && spins < kSpinIters) {
        CPU_RELAX();
        spins++;
    }
    if (n_busy_.load(std::memory_order_acquire) != 0) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_done_.wait(lock, [&] { return n_busy_.load(std::memory_order_acquire) == 0; });
    }
}

} // namespace maya
