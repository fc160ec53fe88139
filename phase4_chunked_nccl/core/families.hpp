// The model families, as the schedules (core/schedules.hpp): each a row in its own file under model/ that registers
// itself at start-up (a RegisterFamily object), so adding one is one new file and no edit elsewhere. A row says all
// the rest of phase 4 needs to know of a family without running it: the model options it takes, how they resolve into
// its width, backward steps and rows, its gradient layout, its memory, its words and metadata columns, and the
// factory that makes its model. A build without CUDA has the rows with no factory. The options, the driver, the
// calibration and the planner ask the row (Config::family_row(), ModelSpec::family_row()); none compares a family's
// name.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/options.hpp"
#include "common/summary.hpp"
#include "phase4_chunked_nccl/core/bucket_plan.hpp"

struct cublasContext;

namespace phase4 {

struct ModelSpec;
class Model;
using ModelFactory = std::unique_ptr<Model> (*)(const ModelSpec& spec, int rank, cublasContext* cublas, float* grads,
                                                float* weights);

// The family phase 4 trains unless --model-family, or an option that chooses another (FamilyRow::chosen_by), says.
inline constexpr const char* kDefaultFamily = "mlp";

struct FamilyRow {
  std::string name, help;
  // The model options it takes (the driver declares them all; any other one given is refused with it).
  std::vector<std::string> options;
  // An option that chooses this family when given without --model-family ("--model"; empty: none).
  std::string chosen_by;
  std::string fit_option;  // the option the memory check names when the model does not fit on the GPU
  // Reads what its options name and fills the spec's hidden (its width), layers (its backward steps) and batch (rows
  // per rank and micro-step); throws ob::UsageError naming the option. Null: they are options already.
  void (*resolve)(ModelSpec& spec) = nullptr;
  GradientLayout (*layout)(const ModelSpec& spec) = nullptr;  // its backward steps' gradient ranges
  // Floats on one GPU beyond the weights, the gradient and the strategy's buffers: activations, work buffers,
  // inputs and targets of every micro-batch.
  double (*activation_floats)(const ModelSpec& spec) = nullptr;
  // The model in words ("MLP H=4096 L=16 B=512 per rank"), for the summary's header and the memory check.
  std::string (*describe)(const ModelSpec& spec) = nullptr;
  // Its own metadata columns beyond hidden, layers and batch (METRICS.md), with their values (null: none).
  std::vector<std::pair<std::string, ob::FieldValue>> (*columns)(const ModelSpec& spec) = nullptr;
  // The name a calibration records for a named model (its layout then kept in the file); null: none, the layout
  // being hidden x layers.
  std::string (*model_name)(const ModelSpec& spec) = nullptr;
  // The files its options name (no output may be one of them); null: none.
  std::vector<ob::NamedPath> (*inputs)(const ModelSpec& spec) = nullptr;
  bool square_layers = false;  // hidden x layers x batch is its shape: a shape sweep, the interference map
  bool whole_tensor_caps = false;  // buckets by caps hold whole tensors, as DDP's bucket_cap_mb assigns them
  ModelFactory make = nullptr;  // set where CUDA is built (made_model<Mine>, model/model.hpp)
  bool takes(const std::string& option) const;
};

// Registers `row` (at start-up, from a family's file). Two rows of one name stop the program.
struct RegisterFamily {
  explicit RegisterFamily(FamilyRow row);
};

std::vector<std::string> family_names();  // every registered family, by name
// The row of family `name`; throws std::invalid_argument when unknown.
const FamilyRow& family_row(const std::string& name);

}  // namespace phase4
