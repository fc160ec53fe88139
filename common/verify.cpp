#include "common/verify.hpp"

#include <cmath>
#include <cstring>

#include "common/csv_writer.hpp"

namespace ob {

ExactCheck compare_exact(const float* got, const float* expected, std::size_t n) {
  ExactCheck result;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::memcmp(&got[i], &expected[i], sizeof(float)) != 0) {
      if (result.wrong == 0) {
        result.first = "index " + std::to_string(i) + ": got " + format_number(got[i]) + ", expected " +
            format_number(expected[i]);
      }
      ++result.wrong;
    }
  }
  return result;
}

RelativeCheck compare_relative(const float* got, const double* reference, std::size_t n) {
  RelativeCheck result;
  double diff2 = 0, ref2 = 0, worst = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(got[i]) - reference[i];
    if (!std::isfinite(got[i])) result.finite = false;
    diff2 += d * d;
    ref2 += reference[i] * reference[i];
    if (!(std::fabs(d) <= worst)) {  // also catches NaN
      worst = std::isnan(d) ? INFINITY : std::fabs(d);
      result.worst_index = i;
      result.worst_got = got[i];
      result.worst_expected = reference[i];
    }
  }
  result.rel_error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (!result.finite) result.rel_error = NAN;
  return result;
}

std::vector<float> uniform_values(std::size_t n, std::uint64_t seed, float scale, std::uint64_t offset) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = scale * (exact_pattern(seed, offset + i, 1000) / 1000.0f);
  return values;
}

std::string RelativeCheck::describe(double tolerance) const {
  return "rel error " + format_number(rel_error, 3) + (passes(tolerance) ? " <= " : " > ") +
      format_number(tolerance, 3) + "; worst at index " + std::to_string(worst_index) + ": got " +
      format_number(worst_got) + ", expected " + format_number(worst_expected);
}

}  // namespace ob
