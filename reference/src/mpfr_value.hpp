// reference/src/mpfr_value.hpp — an owning MPFR number (private to the reference library).
//
// A thin RAII holder around mpfr_t: the reference uses the raw MPFR C API (each variable carries
// its own precision, no global default precision is touched, so threads never interfere).
#pragma once

#include <mpfr.h>

#include <utility>

namespace ropecheck::reference::detail {

// MPFR keeps caches per thread (the constants pi, log 2, ... behind mpfr_sin/mpfr_cos, and a pool of
// limbs) that only mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE) releases; its manual asks every thread to
// call it before it ends (mpfr.info, "mpfr_free_cache"). Without it each worker thread of the report
// and the judge leaked ~0.5 KiB at its end (LeakSanitizer, the `asan` preset). One releaser per thread,
// made when the thread first creates an MPFR value; it runs when that thread ends.
struct thread_cache_releaser {
  ~thread_cache_releaser() { mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE); }
};
inline void release_caches_when_this_thread_ends() {
  thread_local const thread_cache_releaser releaser;
  (void)releaser;
}

class mpfr_value {
 public:
  explicit mpfr_value(mpfr_prec_t precision) {
    release_caches_when_this_thread_ends();
    mpfr_init2(value_, precision);
  }
  ~mpfr_value() { mpfr_clear(value_); }
  mpfr_value(const mpfr_value&) = delete;
  mpfr_value& operator=(const mpfr_value&) = delete;
  // Moving swaps the limbs out; the moved-from value is a valid NaN of minimal precision.
  mpfr_value(mpfr_value&& other) noexcept {
    release_caches_when_this_thread_ends();
    mpfr_init2(value_, MPFR_PREC_MIN);
    mpfr_swap(value_, other.value_);
  }
  mpfr_value& operator=(mpfr_value&& other) noexcept {
    mpfr_swap(value_, other.value_);
    return *this;
  }

  [[nodiscard]] mpfr_ptr get() noexcept { return value_; }
  [[nodiscard]] mpfr_srcptr get() const noexcept { return value_; }
  operator mpfr_ptr() noexcept { return value_; }               // NOLINT: reads like mpfr_t
  operator mpfr_srcptr() const noexcept { return value_; }      // NOLINT

 private:
  mpfr_t value_;
};

}  // namespace ropecheck::reference::detail
