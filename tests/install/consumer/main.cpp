// Uses the installed overlap_common: the schedule bound and the statistics every phase reports.
#include <iostream>

#include "common/metrics.hpp"
#include "common/stats.hpp"

int main() {
  const double bound = ob::schedule_bound_ms(2, {4, 1}, {3, 3}, {0, 1}, 1, 8, 6);  // tests/unit/test_metrics.cpp: 13
  const ob::Stats stats = ob::summarize({3.0, 1.0, 2.0});
  std::cout << "bound " << bound << " p50 " << stats.p50 << std::endl;
  return bound == 13 && stats.p50 == 2 ? 0 : 1;
}
