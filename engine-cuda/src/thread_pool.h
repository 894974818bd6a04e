/* thread_pool.h: a persistent pool that runs one parallel loop at a time.
 *
 * run(n_tasks, fn, arg) calls fn(arg, task, worker) for every task in [0, n_tasks) across the
 * calling thread (worker 0) and up to n_threads - 1 workers, and returns when all are done.
 * Tasks are claimed dynamically. A worker that wakes after the caller has claimed every task
 * does not join the loop, so the caller never waits for a thread the OS has not scheduled (on a
 * loaded 2-core machine that wait would cost a whole scheduler tick per matmul). Idle workers
 * spin (yielding every 64 pauses) for at most 100 us, then sleep on a condition variable, so an
 * idle or host-bound engine does not hold cores the HTTP side needs. Not reentrant; one thread
 * drives it.
 */
#ifndef MAYA_THREAD_POOL_H
#define MAYA_THREAD_POOL_H

#include <stdint.h>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace maya {

typedef void (*TaskFn)(void *arg, int task, int worker);

class ThreadPool {
  public:
    ThreadPool() = default;
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;
    ~ThreadPool();

    /* Starts n_threads - 1 workers. Returns OK or OUT_OF_MEMORY (thread creation failed). */
    int32_t start(int n_threads);
    int n_threads() const { return n_threads_; }
    /* Workers asleep on the condition variable (idle past their spin time). */
    int n_sleeping() const { return n_sleeping_.load(std::memory_order_acquire); }
    /* is_contiguous: each thread first takes the tasks of its own contiguous share of [0,
     * n_tasks) in order, then takes the remaining tasks of other shares from their ends. Tasks
     * that walk memory in order (a matmul's row blocks streaming from DRAM) then give each core
     * one long sequential stream, which the hardware prefetcher follows far better than blocks
     * handed out alternately. A thread that never joins has its share taken from the back. */
    void run(int n_tasks, TaskFn fn, void *arg, bool is_contiguous = false);

  private:
    void worker_main(int worker);
    void drain(int worker);
    void drain_lanes(int worker);
    bool claim_front(int lane, int *task);
    bool claim_back(int lane, int *task);

    int n_threads_ = 1;
    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable cv_;
    // state_: bits 0..15 workers inside the current loop, bit 16 "open", bits 17.. generation.
    std::atomic<uint64_t> state_{0};
    std::atomic<int> next_task_{0};
    // Contiguous loops: per thread's share, (end << 32) | next; a share is empty when next == end.
    static const int kMaxLanes = 64;
    struct alignas(64) Lane {
        std::atomic<uint64_t> range{0};
    };
    Lane lanes_[kMaxLanes];
    int n_lanes_ = 0;
    bool is_contiguous_ = false;
    std::atomic<int> n_sleeping_{0};
    std::atomic<bool> is_stopping_{false};
    int n_tasks_ = 0;
    TaskFn fn_ = nullptr;
    void *arg_ = nullptr;
};

} // namespace maya

#endif
