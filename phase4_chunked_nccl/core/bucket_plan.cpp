#include "phase4_chunked_nccl/core/bucket_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "common/csv_writer.hpp"
#include "common/options.hpp"

namespace phase4 {

GradientLayout GradientLayout::equal(int layers, int hidden) {
  if (layers < 1 || hidden < 1) throw std::invalid_argument("GradientLayout: layers and hidden must be positive");
  return of_sizes(std::vector<std::uint64_t>(static_cast<std::size_t>(layers),
                                             static_cast<std::uint64_t>(hidden) * static_cast<std::uint64_t>(hidden)));
}

GradientLayout GradientLayout::of_sizes(const std::vector<std::uint64_t>& sizes) {
  if (sizes.empty()) throw std::invalid_argument("GradientLayout: no backward steps");
  GradientLayout layout;
  std::uint64_t end = 0;
  for (const std::uint64_t size : sizes) {
    if (size == 0) throw std::invalid_argument("GradientLayout: a backward step of no elements");
    layout.ends.push_back(end += size);
  }
  return layout;
}

int GradientLayout::ready_step(std::uint64_t end) const {
  return static_cast<int>(std::upper_bound(ends.begin(), ends.end(), end - 1) - ends.begin());
}

void require_bucket_count(const std::string& option, double bucket_mb, std::uint64_t elements) {
  const double gradient_mb = 4.0 * static_cast<double>(elements) / (1 << 20);
  const double buckets = std::ceil(gradient_mb / bucket_mb);
  ob::require(buckets <= static_cast<double>(kMostBuckets), option, ob::format_number(bucket_mb),
              "at least " + ob::format_number(gradient_mb / kMostBuckets, 3) + " MiB here: at most " +
                  std::to_string(kMostBuckets) + " buckets of the " + ob::format_number(gradient_mb, 4) +
                  " MiB gradient");
}
namespace {

// Elements of `mb` MiB of fp32, at least 1 and at most 2^62 (a cap far above any gradient cannot wrap around).
std::uint64_t mib_to_elements(double mb) {
  const double elements = std::min(std::floor(mb * (1 << 20) / sizeof(float)), 4611686018427387904.0);
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(elements));
}

// An empty plan of the layout's gradient.
BucketPlan empty_plan(const GradientLayout& layout, const char* who) {
  if (layout.ends.empty()) throw std::invalid_argument(std::string(who) + ": an empty gradient layout");
  BucketPlan plan;
  plan.elements = layout.elements();
  return plan;
}

}  // namespace

BucketPlan plan_by_size(const GradientLayout& layout, double bucket_mb, double first_bucket_mb) {
  if (!(bucket_mb > 0) || !(first_bucket_mb > 0)) {
    throw std::invalid_argument("plan_by_size: bucket sizes must be positive");
  }
  BucketPlan plan = empty_plan(layout, "plan_by_size");
  std::uint64_t begin = 0;
  std::uint64_t cap = mib_to_elements(first_bucket_mb);
  while (begin < plan.elements) {
    const std::uint64_t end = std::min(plan.elements, begin + cap);
    plan.buckets.push_back({begin, end, layout.ready_step(end)});
    begin = end;
    cap = mib_to_elements(bucket_mb);
  }
  return plan;
}

BucketPlan plan_like_ddp(const GradientLayout& layout, double bucket_mb, double first_bucket_mb) {
  if (!(bucket_mb > 0) || !(first_bucket_mb > 0)) {
    throw std::invalid_argument("plan_like_ddp: bucket sizes must be positive");
  }
  std::vector<std::uint64_t> ends;
  std::uint64_t begin = 0;
  for (const std::uint64_t end : layout.ends) {
    const std::uint64_t cap = mib_to_elements(ends.empty() ? first_bucket_mb : bucket_mb);
    if (end - begin >= cap || end == layout.elements()) ends.push_back(begin = end);
  }
  return plan_from_ends(layout, ends);
}

BucketPlan plan_by_chunks(const GradientLayout& layout, int chunks) {
  if (chunks < 1) throw std::invalid_argument("plan_by_chunks: chunks must be positive");
  BucketPlan plan = empty_plan(layout, "plan_by_chunks");
  const std::uint64_t n = std::min<std::uint64_t>(static_cast<std::uint64_t>(chunks), plan.elements);
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::uint64_t begin = plan.elements * k / n, end = plan.elements * (k + 1) / n;
    plan.buckets.push_back({begin, end, layout.ready_step(end)});
  }
  return plan;
}

BucketPlan plan_from_ends(const GradientLayout& layout, const std::vector<std::uint64_t>& ends) {
  BucketPlan plan = empty_plan(layout, "plan_from_ends");
  std::uint64_t begin = 0;
  for (const std::uint64_t end : ends) {
    if (end <= begin || end > plan.elements) throw std::invalid_argument("plan_from_ends: ends must ascend");
    plan.buckets.push_back({begin, end, layout.ready_step(end)});
    begin = end;
  }
  if (begin != plan.elements) throw std::invalid_argument("plan_from_ends: the last end must be the gradient's");
  return plan;
}

BucketPlan align_plan(const BucketPlan& plan, const GradientLayout& layout, std::uint64_t multiple) {
  if (multiple < 1) throw std::invalid_argument("align_plan: the multiple must be positive");
  BucketPlan aligned;
  aligned.elements = plan.elements;
  std::uint64_t begin = 0;
  for (const Bucket& bucket : plan.buckets) {
    const std::uint64_t end = std::min(plan.elements, (bucket.end + multiple - 1) / multiple * multiple);
    if (end <= begin) continue;  // swallowed by the previous bucket's rounding
    aligned.buckets.push_back({begin, end, layout.ready_step(end)});
    begin = end;
  }
  return aligned;
}

BucketPlan align_plan_to_steps(const BucketPlan& plan, const GradientLayout& layout) {
  BucketPlan aligned;
  aligned.elements = plan.elements;
  std::uint64_t begin = 0;
  for (const Bucket& bucket : plan.buckets) {
    const int step = layout.ready_step(bucket.end);
    const std::uint64_t end = layout.ends[static_cast<std::size_t>(step)];
    if (end <= begin) continue;  // inside a step the previous bucket already took whole
    aligned.buckets.push_back({begin, end, step});
    begin = end;
  }
  return aligned;
}

void validate_plan(const BucketPlan& plan, const GradientLayout& layout) {
  std::uint64_t next = 0;
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const Bucket& bucket = plan.buckets[b];
    if (bucket.begin != next || bucket.end <= bucket.begin) {
      throw std::logic_error("bucket " + std::to_string(b) + " does not start where the previous one ended");
    }
    if (bucket.end > layout.elements() || bucket.ready_after != layout.ready_step(bucket.end)) {
      throw std::logic_error("bucket " + std::to_string(b) + " has the wrong ready step");
    }
    next = bucket.end;
  }
  if (next != plan.elements || plan.elements != layout.elements()) {
    throw std::logic_error("buckets do not cover the gradient exactly");
  }
}

std::uint64_t BucketPlan::largest() const {
  std::uint64_t most = 0;
  for (const auto& bucket : buckets) most = std::max(most, bucket.size());
  return most;
}

std::vector<int> BucketPlan::ready_steps() const {
  std::vector<int> ready;
  for (const auto& bucket : buckets) ready.push_back(bucket.ready_after);
  return ready;
}

std::string BucketPlan::describe() const {
  const double first = buckets.empty() ? 0 : buckets.front().size() * sizeof(float) / double(1 << 20);
  char text[128];
  std::snprintf(text, sizeof text, "%zu buckets (first %.3g MiB, largest %.3g MiB)", buckets.size(), first,
                largest() * sizeof(float) / double(1 << 20));
  return text;
}

}  // namespace phase4
