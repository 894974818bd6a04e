/* thread_pool.cpp: join-if-open parallel loops over one atomic state word (see thread_pool.h). */
#include "thread_pool.h"

#include <chrono>

#include "common.h" // defines: fail

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

namespace maya {

static const uint64_t kCountMask = 0xFFFF, kOpen = 1ull << 16;
static const int kGenShift = 17;
// How long an idle worker spins before it sleeps on the condition variable: longer than the gap
// between two parallel loops of one step (a few us), much shorter than the gap between steps
// while the host handles events. Bounded by time, not iterations (a pause costs 10-150 cycles
// depending on the CPU), so a busy server loses at most this much of a core per idle gap.
static const auto kSpinTime = std::chrono::microseconds(100);

ThreadPool::~ThreadPool() {
    is_stopping_.store(true, std::memory_order_release);
    {
        std::lock_guard<std::mutex> lock(mu_);
        state_.fetch_add(1ull << kGenShift, std::memory_order_acq_rel);
    }
    cv_.notify_all();
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

bool ThreadPool::claim_front(int lane, int *task) {
    uint64_t r = lanes_[lane].range.load(std::memory_order_relaxed);
    while ((uint32_t)r < (uint32_t)(r >> 32))
        if (lanes_[lane].range.compare_exchange_weak(r, r + 1, std::memory_order_relaxed)) {
            *task = (int)(uint32_t)r;
            return true;
        }
    return false;
}

bool ThreadPool::claim_back(int lane, int *task) {
    uint64_t r = lanes_[lane].range.load(std::memory_order_relaxed);
    while ((uint32_t)r < (uint32_t)(r >> 32))
        if (lanes_[lane].range.compare_exchange_weak(r, r - (1ull << 32), std::memory_order_relaxed)) {
            *task = (int)(r >> 32) - 1;
            return true;
        }
    return false;
}

void ThreadPool::drain_lanes(int worker) {
    int own = worker % n_lanes_, task;
    while (claim_front(own, &task)) fn_(arg_, task, worker);
    for (int i = 1; i < n_lanes_; i++) {
        int lane = (own + i) % n_lanes_;
        while (claim_back(lane, &task)) fn_(arg_, task, worker);
    }
}

void ThreadPool::worker_main(int worker) {
    uint64_t seen_gen = 0;
    while (true) {
        uint64_t s = state_.load(std::memory_order_acquire);
        auto spin_end = std::chrono::steady_clock::now() + kSpinTime;
        for (int spins = 0; (s >> kGenShift) == seen_gen; spins++) {
            // Yield now and then: when the OS gives this process fewer cores than threads (a busy
            // machine), a spinning worker would otherwise take time slices from the thread doing
            // the work. Yield costs a syscall but nothing when no other thread is runnable.
            if ((spins & 63) == 63) {
                if (std::chrono::steady_clock::now() >= spin_end) break;
                std::this_thread::yield();
            } else CPU_RELAX();
            s = state_.load(std::memory_order_acquire);
        }
        if ((s >> kGenShift) == seen_gen) {
            std::unique_lock<std::mutex> lock(mu_);
            n_sleeping_.fetch_add(1, std::memory_order_seq_cst); // pairs with run()'s store + load
            cv_.wait(lock, [&] { return (state_.load(std::memory_order_seq_cst) >> kGenShift) != seen_gen; });
            n_sleeping_.fetch_sub(1, std::memory_order_acq_rel);
            s = state_.load(std::memory_order_acquire);
        }
        if (is_stopping_.load(std::memory_order_acquire)) return;
        seen_gen = s >> kGenShift;
        // Join only the loop of this generation, and only while it is open.
        bool joined = false;
        while ((s >> kGenShift) == seen_gen && (s & kOpen)) {
            if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
                joined = true;
                break;
            }
        }
        if (!joined) continue;
        if (is_contiguous_) drain_lanes(worker);
        else drain(worker);
        state_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

void ThreadPool::run(int n_tasks, TaskFn fn, void *arg, bool is_contiguous) {
    if (n_tasks <= 0) return;
    if (n_threads_ == 1 || n_tasks == 1) {
        for (int i = 0; i < n_tasks; i++) fn(arg, i, 0);
        return;
    }
    fn_ = fn;
    arg_ = arg;
    n_tasks_ = n_tasks;
    next_task_.store(0, std::memory_order_relaxed);
    is_contiguous_ = is_contiguous && n_tasks >= 2 * n_threads_;
    if (is_contiguous_) {
        n_lanes_ = n_threads_ < kMaxLanes ? n_threads_ : kMaxLanes;
        for (int i = 0; i < n_lanes_; i++) {
            uint64_t lo = (uint64_t)n_tasks * i / n_lanes_, hi = (uint64_t)n_tasks * (i + 1) / n_lanes_;
            lanes_[i].range.store((hi << 32) | lo, std::memory_order_relaxed);
        }
    }
    uint64_t gen = (state_.load(std::memory_order_relaxed) >> kGenShift) + 1;
    state_.store((gen << kGenShift) | kOpen, std::memory_order_seq_cst); // no worker is inside: count 0
    if (n_sleeping_.load(std::memory_order_seq_cst) > 0) {
        std::lock_guard<std::mutex> lock(mu_);
        cv_.notify_all();
    }
    if (is_contiguous_) drain_lanes(0);
    else drain(0);
    state_.fetch_and(~kOpen, std::memory_order_acq_rel);
    // Joined workers finish their last task; yield so a descheduled one can get the core back.
    for (int spins = 0; state_.load(std::memory_order_acquire) & kCountMask; spins++) {
        if ((spins & 63) == 63) std::this_thread::yield();
        else CPU_RELAX();
    }
}

} // namespace maya
