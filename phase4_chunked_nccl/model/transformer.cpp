// The transformer family ("transformer", chosen by --model): a real model's shape (core/transformer.hpp: a preset or
// a Hugging Face config.json), its first --blocks blocks with the embeddings and head whole, on --seq x --micro-batch
// tokens per rank; its backward steps are its tensors with a gradient (its model: model/transformer_model.hpp). Its
// row is known to a build without CUDA; its model is built with CUDA only.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/options.hpp"
#include "phase4_chunked_nccl/core/families.hpp"
#include "phase4_chunked_nccl/core/spec.hpp"
#include "phase4_chunked_nccl/core/transformer.hpp"

#if defined(OVERLAP_HAVE_CUDA)
#include "phase4_chunked_nccl/model/transformer_model.hpp"
#endif

namespace phase4 {
namespace {

int blocks_kept(const ModelSpec& spec) { return spec.blocks > 0 ? spec.blocks : spec.shape.layers; }

// --model read; hidden its width, layers its tensors with a gradient, batch its tokens per rank and micro-step.
void resolve(ModelSpec& spec) {
  ob::require(!spec.model.empty(), "--model-family", spec.family, "needs --model (a preset or a config.json)");
  const TransformerShape shape = load_transformer(spec.model);
  ob::require(spec.blocks <= shape.layers, "--blocks", std::to_string(spec.blocks),
              "at most the model's " + std::to_string(shape.layers) + " blocks");
  const double tokens = 1.0 * spec.seq * spec.micro_batch;
  const double widest =
      std::max({1.0 * shape.hidden, 1.0 * shape.intermediate, 1.0 * shape.heads * shape.head_dim, 1.0 * shape.vocab});
  ob::require(tokens * widest < 2147483647.0 && 1.0 * shape.heads * spec.seq * spec.seq < 2147483647.0, "--seq",
              std::to_string(spec.seq),
              "seq x micro-batch x the widest tensor, and heads x seq^2, must stay below 2^31");
  spec.shape = shape;
  spec.hidden = shape.hidden;
  spec.layers = static_cast<int>(parameter_tensors(shape, spec.blocks).size());
  spec.batch = spec.seq * spec.micro_batch;
}

GradientLayout layout(const ModelSpec& spec) {
  std::vector<std::uint64_t> sizes;
  for (const auto& tensor : parameter_tensors(spec.shape, spec.blocks))
    sizes.push_back(static_cast<std::uint64_t>(tensor.elements()));
  return GradientLayout::of_sizes(sizes);
}

FamilyRow transformer_row() {
  FamilyRow row;
  row.name = "transformer";
  row.help = "a transformer of --model's shape on --seq x --micro-batch tokens per rank, its first --blocks blocks";
  row.options = {"--model", "--seq", "--micro-batch", "--blocks"};
  row.chosen_by = "--model";
  row.fit_option = "--model";
  row.resolve = resolve;
  row.layout = layout;
  row.activation_floats = [](const ModelSpec& spec) {  // activations and backward work buffers, tokens and targets
    const StepMemory held = step_memory(spec.shape, spec.blocks, spec.seq, spec.micro_batch, 0);
    return (held.activations + held.work) / 4 + 2.0 * spec.accum_steps * spec.batch;
  };
  row.describe = [](const ModelSpec& spec) {
    return spec.shape.name + " (" + std::to_string(blocks_kept(spec)) + " of " + std::to_string(spec.shape.layers) +
        " blocks, " + std::to_string(spec.layers) + " tensors), " + std::to_string(spec.micro_batch) + " x " +
        std::to_string(spec.seq) + " tokens per rank";
  };
  row.columns = [](const ModelSpec& spec) {
    return std::vector<std::pair<std::string, ob::FieldValue>>{{"model", spec.shape.name},
                                                               {"seq", std::int64_t{spec.seq}},
                                                               {"micro_batch", std::int64_t{spec.micro_batch}},
                                                               {"blocks", std::int64_t{blocks_kept(spec)}}};
  };
  row.model_name = [](const ModelSpec& spec) { return spec.shape.name; };
  row.inputs = [](const ModelSpec& spec) {  // a config.json (a preset's name is no file)
    const auto presets = transformer_presets();
    const bool preset = std::find(presets.begin(), presets.end(), spec.model) != presets.end();
    return preset ? std::vector<ob::NamedPath>{} : std::vector<ob::NamedPath>{{"--model", spec.model}};
  };
  row.whole_tensor_caps = true;
#if defined(OVERLAP_HAVE_CUDA)
  row.make = made_model<TransformerModel>;
#endif
  return row;
}
const RegisterFamily kTransformer(transformer_row());

}  // namespace
}  // namespace phase4
