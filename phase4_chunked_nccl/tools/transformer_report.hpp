// phase4_model's report (model_main.cpp): a transformer shape's gradient tensors as a table and its summary in words.
#pragma once

#include <string>

#include "common/csv_writer.hpp"

namespace phase4 {

struct ModelQuery {
  std::string model;  // a preset or a config.json (transformer.hpp)
  int seq = 2048, micro_batch = 1, blocks = 0;
  std::string sync = "nccl";
};

struct ModelReport {
  std::string summary;  // lines for a person
  ob::CsvTable tensors{{}};  // index, name, block, rows, cols, elements, grad_mib, cumulative_grad_mib,
      // forward_gflop_per_token: every gradient tensor in backward order
};

// Throws ob::UsageError for a model that is neither a preset nor a valid config.json, or more blocks than it has.
ModelReport describe_model(const ModelQuery& query);

}  // namespace phase4
