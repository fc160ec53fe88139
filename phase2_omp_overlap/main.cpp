// phase2_omp_overlap: compute and communication of a chunked gradient on OpenMP threads, sequential versus
// overlapped, plus compute-only and comm-only runs for the derived metrics (METRICS.md). Runs on any machine.
#include "common/phase_runner.hpp"
#include "phase2_omp_overlap/config.hpp"
#include "phase2_omp_overlap/runner.hpp"

namespace {

ob::PhaseResult run(const phase2::Config& config, const ob::PhaseContext& context) {
  auto run = phase2::run(config, context.progress);
  ob::PhaseResult result;
  result.rows = std::move(run.rows);
  result.events = std::move(run.events);
  if (run.wrong > 0) result.failure = std::to_string(run.wrong) + " wrong elements; first: " + run.first_wrong;
  result.meta = {{"clock", "std::chrono::steady_clock"},
                 {"workload", config.workload},
                 {"compute_threads", config.compute_threads()},
                 {"omp_threads", config.compute_threads() + 1}};  // the threads used, whatever OMP_NUM_THREADS said
  result.header = "phase2_omp_overlap: " + config.workload + " workload, " + std::to_string(config.chunks) +
      " chunks, " + std::to_string(config.compute_threads()) + " compute thread(s) + 1 comm thread, " + "median of " +
      std::to_string(config.common.iters) + " iterations (steady_clock)";
  result.table = ob::render_summary(result.rows, phase2::console_columns());
  if (const auto* bound = ob::find_row(result.rows, ob::Mode::kBound)) {
    result.table += "# model (bound row): " + ob::format_number(bound->time_ms.p50, 6) + " ms\n";
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  phase2::Config config;
  auto phase = ob::make_phase("phase2", "phase2_omp_overlap",
                              "Phase 2: compute/communication overlap of a chunked gradient on OpenMP threads", config,
                              phase2::add_options);
  phase.validate = [&](const CLI::App&) { phase2::validate(config); };
  phase.run = [&](const ob::PhaseContext& context) { return run(config, context); };
  return ob::run_phase(argc, argv, phase);
}
