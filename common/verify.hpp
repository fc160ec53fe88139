// Result checkers shared by every phase. Each reports how many elements are wrong and where the first one is,
// with the value got and the value expected, so a failure message can name all three. Tests feed each of them a
// deliberately corrupted buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ob {

struct ExactCheck {
  std::uint64_t wrong = 0;
  std::string first;  // "index 12: got 3, expected 4" for the first wrong element, "" when none
};

// Bitwise-exact comparison (used where inputs are integers stored as floats, so every sum is exact).
ExactCheck compare_exact(const float* got, const float* expected, std::size_t n);

struct RelativeCheck {
  double rel_error = 0;  // ||got - ref||_2 / ||ref||_2 (the absolute norm when ||ref|| is 0)
  std::size_t worst_index = 0;
  double worst_got = 0, worst_expected = 0;
  bool finite = true;  // false when any element is NaN or infinite
  // "rel error 3e-3 > 1e-5; worst at index 7: got 1.5, expected 1.25"
  std::string describe(double tolerance) const;
  bool passes(double tolerance) const { return finite && rel_error <= tolerance; }
};

RelativeCheck compare_relative(const float* got, const double* reference, std::size_t n);

#if defined(__CUDACC__)
#define OB_HOST_DEVICE __host__ __device__
#else
#define OB_HOST_DEVICE
#endif

// Small integers in [-range, range], never all zero, deterministic in (seed, index): inputs whose products and
// sums are exact in fp32 as long as they stay below 2^24. The same function on the host and in CUDA kernels.
OB_HOST_DEVICE inline float exact_pattern(std::uint64_t seed, std::uint64_t index, int range = 2) {
  // splitmix64 of (seed, index): cheap, deterministic and well mixed.
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const auto span = static_cast<std::uint64_t>(2 * range + 1);
  const auto value = static_cast<int>(z % span) - range;
  return static_cast<float>(value == 0 && (index % 3 == 0) ? 1 : value);  // fewer zeros, never all zero
}

// n values scale * U(-1, 1) in steps of 1/1000, deterministic in (seed, offset + i): the seeded test and training
// data of every phase (a shard starts at its global offset, so shards are pieces of one data set).
std::vector<float> uniform_values(std::size_t n, std::uint64_t seed, float scale, std::uint64_t offset = 0);

}  // namespace ob
