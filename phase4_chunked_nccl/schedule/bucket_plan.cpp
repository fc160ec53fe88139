#include "phase4_chunked_nccl/schedule/bucket_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "common/csv_writer.hpp"
#include "common/options.hpp"

namespace phase4 {

void require_bucket_count(const std::string& option, double bucket_mb, int layers, int hidden) {
  const double gradient_mb = 4.0 * layers * hidden * static_cast<double>(hidden) / (1 << 20);
  const double buckets = std::ceil(gradient_mb / bucket_mb);
  ob::require(buckets <= static_cast<double>(kMostBuckets), option, ob::format_number(bucket_mb),
              "at least " + ob::format_number(gradient_mb / kMostBuckets, 3) + " MiB here: at most " +
                  std::to_string(kMostBuckets) + " buckets of the " + ob::format_number(gradient_mb, 4) +
                  " MiB gradient");
}
namespace {

std::uint64_t layer_elements(int hidden) { return static_cast<std::uint64_t>(hidden) * hidden; }

int ready_step(std::uint64_t end, int hidden) { return static_cast<int>((end - 1) / layer_elements(hidden)); }

std::uint64_t mib_to_elements(double mb) {
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::floor(mb * (1 << 20) / sizeof(float))));
}

}  // namespace

BucketPlan plan_by_size(int layers, int hidden, double bucket_mb, double first_bucket_mb) {
  if (layers < 1 || hidden < 1 || !(bucket_mb > 0) || !(first_bucket_mb > 0)) {
    throw std::invalid_argument("plan_by_size: layers, hidden and bucket sizes must be positive");
  }
  BucketPlan plan;
  plan.elements = static_cast<std::uint64_t>(layers) * layer_elements(hidden);
  std::uint64_t begin = 0;
  std::uint64_t cap = mib_to_elements(first_bucket_mb);
  while (begin < plan.elements) {
    const std::uint64_t end = std::min(plan.elements, begin + cap);
    plan.buckets.push_back({begin, end, ready_step(end, hidden)});
    begin = end;
    cap = mib_to_elements(bucket_mb);
  }
  return plan;
}

BucketPlan plan_by_chunks(int layers, int hidden, int chunks) {
  if (layers < 1 || hidden < 1 || chunks < 1) throw std::invalid_argument("plan_by_chunks: sizes must be positive");
  BucketPlan plan;
  plan.elements = static_cast<std::uint64_t>(layers) * layer_elements(hidden);
  const std::uint64_t n = std::min<std::uint64_t>(static_cast<std::uint64_t>(chunks), plan.elements);
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::uint64_t begin = plan.elements * k / n, end = plan.elements * (k + 1) / n;
    plan.buckets.push_back({begin, end, ready_step(end, hidden)});
  }
  return plan;
}

BucketPlan plan_from_ends(int layers, int hidden, const std::vector<std::uint64_t>& ends) {
  BucketPlan plan;
  plan.elements = static_cast<std::uint64_t>(layers) * layer_elements(hidden);
  std::uint64_t begin = 0;
  for (const std::uint64_t end : ends) {
    if (end <= begin || end > plan.elements) throw std::invalid_argument("plan_from_ends: ends must ascend");
    plan.buckets.push_back({begin, end, ready_step(end, hidden)});
    begin = end;
  }
  if (begin != plan.elements) throw std::invalid_argument("plan_from_ends: the last end must be the gradient's");
  return plan;
}

BucketPlan align_plan(const BucketPlan& plan, int hidden, std::uint64_t multiple) {
  if (multiple < 1) throw std::invalid_argument("align_plan: the multiple must be positive");
  BucketPlan aligned;
  aligned.elements = plan.elements;
  std::uint64_t begin = 0;
  for (const Bucket& bucket : plan.buckets) {
    const std::uint64_t end = std::min(plan.elements, (bucket.end + multiple - 1) / multiple * multiple);
    if (end <= begin) continue;  // swallowed by the previous bucket's rounding
    aligned.buckets.push_back({begin, end, ready_step(end, hidden)});
    begin = end;
  }
  return aligned;
}

void validate_plan(const BucketPlan& plan, int layers, int hidden) {
  std::uint64_t next = 0;
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const Bucket& bucket = plan.buckets[b];
    if (bucket.begin != next || bucket.end <= bucket.begin) {
      throw std::logic_error("bucket " + std::to_string(b) + " does not start where the previous one ended");
    }
    if (bucket.ready_after != ready_step(bucket.end, hidden) || bucket.ready_after >= layers) {
      throw std::logic_error("bucket " + std::to_string(b) + " has the wrong ready step");
    }
    next = bucket.end;
  }
  if (next != plan.elements || plan.elements != static_cast<std::uint64_t>(layers) * layer_elements(hidden)) {
    throw std::logic_error("buckets do not cover the gradient exactly");
  }
}

std::string BucketPlan::describe() const {
  const double first = buckets.empty() ? 0 : buckets.front().size() * sizeof(float) / double(1 << 20);
  const double largest = buckets.empty() ? 0 : std::max_element(buckets.begin(), buckets.end(), [](auto& a, auto& b) {
                                                 return a.size() < b.size();
                                               })->size() * sizeof(float) / double(1 << 20);
  char text[128];
  std::snprintf(text, sizeof text, "%zu buckets (first %.3g MiB, largest %.3g MiB)", buckets.size(), first, largest);
  return text;
}

}  // namespace phase4
