#include "phase1_cuda_baseline/report.hpp"

#include <cmath>

#include "common/console_table.hpp"
#include "common/csv_writer.hpp"

namespace phase1 {

bool diverged(const std::vector<double>& loss) {
  return !loss.empty() && !(std::isfinite(loss.back()) && loss.back() <= loss.front());
}

std::vector<ob::SummaryRow> summary_rows(const Config& config, const std::vector<VariantResult>& results) {
  std::vector<ob::SummaryRow> rows;
  const double gemm_flops = 2.0 * config.batch * config.in * config.out;
  for (const auto& result : results) {
    ob::SummaryRow base;
    base.mode = ob::Mode::kSeq;
    base.iters = config.common.iters;
    base.config("variant", gemm_kernel_name(result.kernel))
        .config("tf32", result.tf32)
        .config("batch", config.batch)
        .config("in", config.in)
        .config("out", config.out)
        .config("memory", config.memory)
        .config("clock", "cuda_event");
    auto add = [&](const std::string& kernel, const std::vector<double>& ms, double flops) {
      ob::SummaryRow row = base;
      row.time_ms = ob::summarize(ms);
      row.config("kernel", kernel);
      row.set("gflops", flops > 0 ? flops / (row.time_ms.p50 * 1e-3) / 1e9 : std::nan(""));
      row.set("first_loss", result.loss.front()).set("final_loss", result.loss.back());
      row.set("lr", config.learning_rate()).set("diverged", diverged(result.loss));
      if (result.checked) {
        row.set("forward_rel_error", result.forward_check.rel_error)
            .set("backward_rel_error", result.backward_check.rel_error);
      }
      rows.push_back(row);
    };
    for (std::size_t k = 0; k < kStepKernels.size(); ++k) {
      const bool is_gemm = kStepKernels[k] == "forward" || kStepKernels[k] == "backward";
      add(kStepKernels[k], result.kernel_ms[k], is_gemm ? gemm_flops : 0.0);
    }
    add("iteration", result.iter_ms, 2.0 * gemm_flops);
  }
  return rows;
}

std::string console_table(const std::vector<ob::SummaryRow>& rows) {
  ob::ConsoleTable table({{"variant", ""},
                          {"kernel", ""},
                          {"time_p50", "us"},
                          {"time_p95", "us"},
                          {"rate", "GFLOP/s"},
                          {"final_loss", ""},
                          {"rel_error", "fwd/bwd"}});
  for (const auto& row : rows) {
    const std::string variant = row.get("variant") + (row.get("tf32") == "1" ? "-tf32" : "");
    const std::string error = !row.has("forward_rel_error") ? "-"
                                                            : ob::format_number(row.number("forward_rel_error"), 2) +
            "/" + ob::format_number(row.number("backward_rel_error"), 2);
    const double rate = row.number("gflops");
    const std::string gflops = std::isnan(rate) ? "-" : ob::format_number(rate, 5);
    table.add_row({variant, row.get("kernel"), ob::format_number(row.time_ms.p50 * 1e3, 5),
                   ob::format_number(row.time_ms.p95 * 1e3, 5), gflops, ob::format_number(row.number("final_loss"), 4),
                   error});
  }
  std::string text = table.render();
  for (const auto& row : rows) {
    if (row.get("kernel") == "iteration" && row.number("diverged") == 1) {
      text += "# " + row.get("variant") + ": the loss diverged (" + ob::format_number(row.number("first_loss"), 4) +
          " -> " + ob::format_number(row.number("final_loss"), 4) + ") at learning rate " +
          ob::format_number(row.number("lr"), 4) + ": the timings stand, the training does not; lower --lr\n";
    }
  }
  return text;
}

std::string first_check_failure(const std::vector<VariantResult>& results, const Trainer& trainer) {
  for (const auto& result : results) {
    if (!result.checked) continue;
    const double tolerance = trainer.tolerance(result.kernel);
    const std::string name = std::string(gemm_kernel_name(result.kernel)) + (result.tf32 ? "-tf32" : "");
    if (!result.forward_check.passes(tolerance))
      return name + " forward y = x·W: " + result.forward_check.describe(tolerance);
    if (!result.backward_check.passes(tolerance))
      return name + " backward dW = xᵀ·dY: " + result.backward_check.describe(tolerance);
  }
  return "";
}

}  // namespace phase1
