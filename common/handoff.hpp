// Hand-off between a compute thread and a dedicated communication thread: chunk k is published by storing k + 1
// in an atomic counter, and the other side waits for it.
#pragma once

#include <atomic>

namespace ob {

// Waits until `counter` exceeds `value`: polls with yield for a few microseconds (a hand-off that is already due
// costs nothing), then sleeps in short steps so a long wait leaves the core to the compute team. Not a futex wait:
// a thread woken from one lands on the waker's core and waits there behind any spinning thread for a scheduler
// time slice (seen: 3 ms on a 2-core machine).
void wait_above(const std::atomic<int>& counter, int value);

// A barrier of `parties` threads that need not be a whole OpenMP team (a persistent compute team beside a
// communication thread in one parallel region): the last to arrive opens the next generation, the others wait with
// wait_above. Reusable; parties may be set again only while no thread is waiting.
class TeamBarrier {
 public:
  explicit TeamBarrier(int parties) : parties_(parties) {}
  void set_parties(int parties) { parties_ = parties; }
  void arrive_and_wait();

 private:
  int parties_;
  std::atomic<int> arrived_{0}, generation_{0};
};

}  // namespace ob
