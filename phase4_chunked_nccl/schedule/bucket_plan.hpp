// How the gradient is cut into all-reduce buckets. All dW live in one contiguous fp32 buffer laid out in backward
// order (layer L first, each layer H x H elements). Buckets are element ranges of that buffer, cut either by size
// (a first bucket of at most first_bucket_mb, then buckets of at most bucket_mb, as PyTorch DDP does) or into
// `chunks` equal pieces. Buckets may span layer boundaries and layers may span buckets: a bucket is ready once the
// backward pass has written every layer it overlaps, i.e. after the backward step of the layer holding its last
// element.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace phase4 {

struct Bucket {
  std::uint64_t begin = 0, end = 0;  // elements [begin, end) of the gradient buffer
  int ready_after = 0;               // backward step (0 = layer L) after which every element is written
  std::uint64_t size() const { return end - begin; }
};

struct BucketPlan {
  std::vector<Bucket> buckets;
  std::uint64_t elements = 0;  // layers * hidden^2
  std::string describe() const;  // "42 buckets: 1 MiB first, 25 MiB cap"
};

// The most buckets a plan may hold: each costs a collective, events and timeline rows per step, and a plan of
// one-element buckets would take memory in proportion to the gradient (seen: 24 GB for --bucket-mb 1e-7).
inline constexpr std::uint64_t kMostBuckets = 1 << 16;

// Throws ob::UsageError naming `option` when buckets of `bucket_mb` MiB cut a gradient of layers x hidden^2 fp32
// into more than kMostBuckets (the caps are refused up front, not when the plan is built).
void require_bucket_count(const std::string& option, double bucket_mb, int layers, int hidden);

// Size-capped buckets: first at most first_bucket_mb, then at most bucket_mb (MiB of fp32); each at least one
// element. Throws std::invalid_argument for non-positive sizes.
BucketPlan plan_by_size(int layers, int hidden, double bucket_mb, double first_bucket_mb);

// `chunks` equal pieces (sizes differ by at most one element); capped at one element each.
BucketPlan plan_by_chunks(int layers, int hidden, int chunks);

// Buckets ending at `ends` (elements, ascending, the last one layers * hidden^2); throws std::invalid_argument
// otherwise.
BucketPlan plan_from_ends(int layers, int hidden, const std::vector<std::uint64_t>& ends);

// The same plan with every bucket boundary but the last moved up to a multiple of `multiple` elements (buckets that
// vanish are dropped; ready steps follow the new ends): what a strategy that splits each bucket into equal per-rank
// slices needs. Only the last bucket may end off the multiple.
BucketPlan align_plan(const BucketPlan& plan, int hidden, std::uint64_t multiple);

// Throws std::logic_error unless the buckets cover every element exactly once, in order, with ready steps that
// hold their last element's layer.
void validate_plan(const BucketPlan& plan, int layers, int hidden);

}  // namespace phase4
