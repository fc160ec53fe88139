#include "phase4_chunked_nccl/tools/transformer_report.hpp"

#include <sstream>

#include "common/errors.hpp"
#include "phase4_chunked_nccl/core/transformer.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"

namespace phase4 {
namespace {

constexpr double kMiB = 1 << 20, kGiB = 1 << 30;

std::string gib(double bytes) { return ob::format_number(bytes / kGiB, 4) + " GiB"; }

std::string describe_shape(const TransformerShape& s) {
  std::ostringstream out;
  out << s.layers << " blocks of hidden " << s.hidden << " (" << s.heads << " heads";
  if (s.kv_heads != s.heads) out << ", " << s.kv_heads << " K/V heads";
  out << " of " << s.head_dim << "), " << (s.mlp == MlpKind::kSwiGlu ? "SwiGLU" : "GELU") << " MLP of "
      << s.intermediate << ", vocabulary " << s.vocab << ", LM head " << (s.tied ? "tied" : "untied");
  if (s.positions > 0) out << ", " << s.positions << " learned positions";
  return out.str();
}

}  // namespace

ModelReport describe_model(const ModelQuery& q) {
  const TransformerShape shape = load_transformer(q.model);
  ob::require(q.blocks <= shape.layers, "--blocks", std::to_string(q.blocks),
              "at most the model's " + std::to_string(shape.layers) + " blocks (0: all)");
  const auto tensors = parameter_tensors(shape, q.blocks);
  ModelReport report{"",
                     ob::CsvTable({"index", "name", "block", "rows", "cols", "elements", "grad_mib",
                                   "cumulative_grad_mib", "forward_gflop_per_token"})};
  double cumulative = 0, gemm_flops = 0, block_bytes = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    const double bytes = 4.0 * static_cast<double>(t.elements());
    cumulative += bytes;
    gemm_flops += t.forward_flops_per_token();
    if (t.block == 0) block_bytes += bytes;
    report.tensors.add_row({std::to_string(i), t.name, std::to_string(t.block), std::to_string(t.rows),
                            std::to_string(t.cols), std::to_string(t.elements()), ob::format_number(bytes / kMiB, 6),
                            ob::format_number(cumulative / kMiB, 6),
                            ob::format_number(t.forward_flops_per_token() / 1e9, 6)});
  }
  const int blocks = q.blocks > 0 ? q.blocks : shape.layers;
  const double buffers = sync_row(q.sync).buffers;
  const StepMemory memory = step_memory(shape, q.blocks, q.seq, q.micro_batch, buffers);
  const double attention = attention_flops_per_token(shape, q.seq) * blocks;
  std::ostringstream out;
  out << "phase4_model: " << shape.name << ": " << describe_shape(shape) << "\n";
  if (blocks < shape.layers) {
    out << "  the first " << blocks << " of " << shape.layers << " blocks, with the embeddings, final norm and LM head "
        << "whole: " << parameter_count(shape, q.blocks) << " of the model's " << parameter_count(shape)
        << " parameters\n";
  }
  out << "  parameters: " << parameter_count(shape, q.blocks) << "; the fp32 gradient: " << gib(cumulative) << " in "
      << tensors.size() << " tensors, a block's " << gib(block_bytes) << "\n"
      << "  the backward completes " << tensors.front().name << " first ("
      << gib(4.0 * static_cast<double>(tensors.front().elements())) << ") and " << tensors.back().name << " last ("
      << gib(4.0 * static_cast<double>(tensors.back().elements())) << "): the last bucket holds it\n"
      << "  forward work per token: " << ob::format_number(gemm_flops / 1e9, 4) << " GFLOP in GEMMs and "
      << ob::format_number(attention / 1e9, 4) << " GFLOP in the attention core at seq " << q.seq
      << " (the backward twice that)\n"
      << "  one rank's step at seq " << q.seq << " x micro-batch " << q.micro_batch << " with --sync " << q.sync << " ("
      << ob::format_number(buffers) << (buffers == 1 ? " gradient-sized buffer" : " gradient-sized buffers")
      << "): weights " << gib(memory.weights) << " + gradients " << gib(memory.gradients) << " + activations "
      << gib(memory.activations) << " + backward work " << gib(memory.work) << " = " << gib(memory.total()) << "\n";
  report.summary = out.str();
  return report;
}

}  // namespace phase4
