// How the gradient is cut into all-reduce buckets. All dW live in one contiguous fp32 buffer laid out in backward
// order: backward step s writes one range of it (a GradientLayout: phase 4's model has L equal steps of H x H
// elements, layer L first; a transformer one step per tensor, of any size). Buckets are element ranges of that
// buffer, cut either by size (a first bucket of at most first_bucket_mb, then buckets of at most bucket_mb, as PyTorch
// DDP does) or into `chunks` equal pieces. Buckets may span step boundaries and steps may span buckets: a bucket is
// ready once the backward pass has written every step it overlaps, i.e. after the step holding its last element.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace phase4 {

// Bucket caps in MiB (--bucket-mb, --first-bucket-mb, a bucket-mb or plan sweep's values, phase4_predict's).
constexpr double kLeastBucketMb = 1e-6, kMostBucketMb = 1e6;

struct Bucket {
  std::uint64_t begin = 0, end = 0;  // elements [begin, end) of the gradient buffer
  int ready_after = 0;  // backward step (0 = layer L) after which every element is written
  std::uint64_t size() const { return end - begin; }
};

// Where each backward step's gradient ends in the buffer: step s writes [ends[s - 1], ends[s]) (from 0 for s = 0).
struct GradientLayout {
  std::vector<std::uint64_t> ends;  // ascending, the last one the gradient's length

  // `layers` steps of hidden^2 elements each (phase 4's model).
  static GradientLayout equal(int layers, int hidden);
  // Steps of the given sizes (each > 0), in backward order; throws std::invalid_argument otherwise.
  static GradientLayout of_sizes(const std::vector<std::uint64_t>& sizes);
  std::uint64_t elements() const { return ends.empty() ? 0 : ends.back(); }
  int steps() const { return static_cast<int>(ends.size()); }
  std::uint64_t begin(int step) const { return step == 0 ? 0 : ends[static_cast<std::size_t>(step) - 1]; }
  // The step that writes element `end - 1` (end in [1, elements()]).
  int ready_step(std::uint64_t end) const;
};

struct BucketPlan {
  std::vector<Bucket> buckets;
  std::uint64_t elements = 0;  // the gradient's length
  std::string describe() const;  // "42 buckets: 1 MiB first, 25 MiB cap"
  std::uint64_t largest() const;  // the largest bucket's elements (0: no bucket)
  std::vector<int> ready_steps() const;  // each bucket's ready_after, in order
};

// The most buckets a plan may hold: each costs a collective, events and timeline rows per step, and a plan of
// one-element buckets would take memory in proportion to the gradient (seen: 24 GB for --bucket-mb 1e-7).
inline constexpr std::uint64_t kMostBuckets = 1 << 16;

// Throws ob::UsageError naming `option` when buckets of `bucket_mb` MiB cut a gradient of `elements` fp32 into more
// than kMostBuckets (the caps are refused up front, not when the plan is built).
void require_bucket_count(const std::string& option, double bucket_mb, std::uint64_t elements);

// Size-capped buckets: first at most first_bucket_mb, then at most bucket_mb (MiB of fp32); each at least one
// element. Throws std::invalid_argument for non-positive sizes or an empty layout.
BucketPlan plan_by_size(const GradientLayout& layout, double bucket_mb, double first_bucket_mb);

// PyTorch DDP's own assignment (compute_bucket_assignment_by_size, one dtype): whole backward steps in order fill a
// bucket until it holds at least its cap (the first bucket first_bucket_mb, DDP's first_bucket_bytes; the others
// bucket_mb), then the next begins; no step is cut. Throws std::invalid_argument for non-positive sizes.
BucketPlan plan_like_ddp(const GradientLayout& layout, double bucket_mb, double first_bucket_mb = 1.0);

// `chunks` equal pieces (sizes differ by at most one element); capped at one element each.
BucketPlan plan_by_chunks(const GradientLayout& layout, int chunks);

// Buckets ending at `ends` (elements, ascending, the last one the gradient's length); throws std::invalid_argument
// otherwise.
BucketPlan plan_from_ends(const GradientLayout& layout, const std::vector<std::uint64_t>& ends);

// The same plan with every bucket boundary but the last moved up to a multiple of `multiple` elements (buckets that
// vanish are dropped; ready steps follow the new ends): what a strategy that splits each bucket into equal per-rank
// slices needs. Only the last bucket may end off the multiple.
BucketPlan align_plan(const BucketPlan& plan, const GradientLayout& layout, std::uint64_t multiple);

// The same plan with every bucket boundary moved up to the end of the backward step it falls in (buckets that vanish
// are dropped): whole steps per bucket, what a strategy that cuts each step's tensor into per-rank slices needs.
BucketPlan align_plan_to_steps(const BucketPlan& plan, const GradientLayout& layout);

// Throws std::logic_error unless the buckets cover every element exactly once, in order, with ready steps that
// hold their last element's step.
void validate_plan(const BucketPlan& plan, const GradientLayout& layout);

// Phase 4's model of `layers` equal layers of width `hidden` (GradientLayout::equal).
inline void require_bucket_count(const std::string& option, double bucket_mb, int layers, int hidden) {
  require_bucket_count(option, bucket_mb, GradientLayout::equal(layers, hidden).elements());
}
inline BucketPlan plan_by_size(int layers, int hidden, double bucket_mb, double first_bucket_mb) {
  return plan_by_size(GradientLayout::equal(layers, hidden), bucket_mb, first_bucket_mb);
}
inline BucketPlan plan_by_chunks(int layers, int hidden, int chunks) {
  return plan_by_chunks(GradientLayout::equal(layers, hidden), chunks);
}
inline BucketPlan plan_from_ends(int layers, int hidden, const std::vector<std::uint64_t>& ends) {
  return plan_from_ends(GradientLayout::equal(layers, hidden), ends);
}
inline void validate_plan(const BucketPlan& plan, int layers, int hidden) {
  validate_plan(plan, GradientLayout::equal(layers, hidden));
}

}  // namespace phase4
