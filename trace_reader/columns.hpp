// What a rank's Kineto trace becomes once read natively: the columns ob-analyze reads (overlap_bench/trace/
// trace_read.py's _keep keeps the same, event by event), strings interned once. Filled by kineto_events.cpp, written
// by columns_file.cpp, read back by overlap_bench/trace/trace_native.py.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ob::trace {

// The input is well formed but holds something the native reader does not reproduce exactly (a number where a string
// was expected, a step marker that is not digits, bad JSON): the Python reader decides what it means.
struct Unhandled : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The input is refused whatever reads it (nests too deep, one event too large, inflates past the cap).
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class StringTable {
 public:
  StringTable() { id(""); }
  uint32_t id(std::string_view text) {
    auto found = ids_.find(std::string(text));
    if (found != ids_.end()) return found->second;
    auto next = static_cast<uint32_t>(texts_.size());
    texts_.emplace_back(text);
    ids_.emplace(texts_.back(), next);
    return next;
  }
  const std::vector<std::string>& texts() const { return texts_; }

 private:
  std::vector<std::string> texts_;
  std::unordered_map<std::string, uint32_t> ids_;
};

struct Columns {
  // header (only what came before the first event object, as the Python reader's first pass)
  int64_t rank = -1, world = 0, start_ns = 0;
  uint32_t nccl = 0, gpu = 0;  // string ids
  bool fsdp = false;
  bool saw_event_object = false;
  // kernels, memsets and copies
  std::vector<double> k_start, k_end, k_bytes;
  std::vector<int64_t> k_stream, k_corr;
  std::vector<uint32_t> k_name, k_shape, k_coll;
  // launching calls, in order (a later call of one correlation replaces an earlier one)
  std::vector<int64_t> l_corr;
  std::vector<double> l_ts;
  std::vector<int64_t> graph_corr;
  std::vector<int64_t> step_number;
  std::vector<double> step_start, step_end;
  std::vector<double> co_start, co_end, opt_start, opt_end, wrap_start, wrap_end;
  std::vector<double> grad_ts, grad_elems;
  std::vector<double> bw_start, bw_end;
  std::vector<uint32_t> bw_name;
  std::vector<double> wrapping_start, wrapping_end;
  std::vector<uint32_t> wrapping_tid;
  std::vector<uint32_t> op_tid;
  std::vector<double> op_start, op_end;
  StringTable strings;  // names, shapes, collectives, nccl, gpu
  StringTable tids;  // each thread id as JSON text ("null" where absent)
  std::string sha256;  // the file's, in hex ("" where the build cannot hash: trace_file.hpp)
};

}  // namespace ob::trace
