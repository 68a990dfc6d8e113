// tools/sweep/parallel.hpp — work items handed out dynamically to a pool of threads, with progress
// reported from the calling thread: the loop of the report's sweep and of certify's.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ropecheck::sweep {

// Runs f(i, t) for every i in [0, n) on `threads` workers (t = the worker's index; each worker takes
// increasing i). f returns the work it did (in the units of `total`); progress(done, total) is called
// from the calling thread at least every 0.25 s and once at the end with done == total. The first
// exception thrown by f stops the hand-out and is rethrown here once every worker has stopped.
template <class F>
void parallel_for(std::size_t n, int threads, std::int64_t total,
                  const std::function<void(std::int64_t, std::int64_t)>& progress, F f) {
  std::atomic<std::size_t> next{0};
  std::atomic<std::int64_t> done{0};
  std::mutex m;
  std::condition_variable cv;
  int running = threads;
  std::exception_ptr error;
  {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (std::size_t i; (i = next.fetch_add(1)) < n;) {
          try {
            done.fetch_add(f(i, t));
          } catch (...) {
            const std::lock_guard lock(m);
            if (!error) error = std::current_exception();
            next.store(n);
          }
        }
        const std::lock_guard lock(m);
        if (--running == 0) cv.notify_all();
      });
    std::unique_lock lock(m);
    while (!cv.wait_for(lock, std::chrono::milliseconds(250), [&] { return running == 0; })) {
      lock.unlock();
      if (progress) progress(done.load(), total);
      lock.lock();
    }
  }
  if (error) std::rethrow_exception(error);
  if (progress) progress(total, total);
}

}  // namespace ropecheck::sweep
