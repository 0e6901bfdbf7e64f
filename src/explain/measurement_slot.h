// One timed measurement on the speed model at a time. Timings are the point of the speed panels
// (roofline trace, speculative passes, batching curve, batching schedules), and two measurements
// running together would each time the other's work; so a second one is refused at once (the
// server answers 409), never queued behind a batching curve that may run for seconds.
#pragma once
#include <atomic>

#include "core/error.h"

namespace nucleus::explain {

// Thrown when a measurement is asked for while another runs.
class MeasurementBusy : public Error {
 public:
  using Error::Error;
};

class MeasurementSlot {
 public:
  // Holds the slot until destroyed or moved from; may be released on another thread (the
  // batching curve's worker).
  class Hold {
   public:
    Hold() = default;
    explicit Hold(MeasurementSlot* slot) : slot_(slot) {}
    Hold(Hold&& other) noexcept : slot_(other.slot_) { other.slot_ = nullptr; }
    Hold& operator=(Hold&& other) noexcept {
      if (this != &other) {
        release();
        slot_ = other.slot_;
        other.slot_ = nullptr;
      }
      return *this;
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() { release(); }
    void release() {
      if (slot_) slot_->busy_.store(false);
      slot_ = nullptr;
    }

   private:
    MeasurementSlot* slot_ = nullptr;
  };

  // The slot, or MeasurementBusy while another measurement holds it.
  Hold acquire() {
    bool expected = false;
    if (!busy_.compare_exchange_strong(expected, true))
      throw MeasurementBusy("another measurement is running on the speed model; retry when it finishes");
    return Hold(this);
  }
  bool busy() const { return busy_.load(); }

 private:
  std::atomic<bool> busy_{false};
};

}  // namespace nucleus::explain
