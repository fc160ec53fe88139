// phase2_omp_overlap: compute and communication of a chunked gradient on OpenMP threads, sequential versus
// overlapped, plus compute-only and comm-only runs for the derived metrics (METRICS.md). Runs on any machine.
#include <iostream>

#include "common/errors.hpp"
#include "common/main_guard.hpp"
#include "common/metadata.hpp"
#include "common/run_output.hpp"
#include "common/watchdog.hpp"
#include "phase2_omp_overlap/config.hpp"
#include "phase2_omp_overlap/runner.hpp"

int main(int argc, char** argv) {
  return ob::guarded_main("phase2_omp_overlap", [&]() -> int {
    CLI::App app("Phase 2: compute/communication overlap of a chunked gradient on OpenMP threads",
                 "phase2_omp_overlap");
    phase2::Config config;
    phase2::add_options(app, config);
    if (auto code = ob::parse_options(app, argc, argv, true)) return *code;
    phase2::validate(config);
    const auto paths = ob::resolve_output_paths("phase2", config.common);
    // A step that makes no progress for --timeout-s ends the run (exit 3), naming where it stalled.
    ob::Watchdog watchdog("phase2_omp_overlap", 0, 1, config.fault, nullptr);

    const auto result = phase2::run(config, config.common.quiet ? nullptr : &std::cerr);

    const std::string unfired = watchdog.unfired_fault();  // a fault whose step never came proved nothing
    if (!unfired.empty()) throw ob::UsageError(unfired);
    auto meta = ob::base_metadata("phase2", argc, argv);
    meta["clock"] = "std::chrono::steady_clock";
    meta["workload"] = config.workload;
    meta["compute_threads"] = config.compute_threads();
    meta["omp_threads"] = config.compute_threads() + 1;  // the threads used, whatever OMP_NUM_THREADS said
    const bool passed = result.wrong == 0;
    if (passed) write_run_outputs(paths, "phase2", result.rows, meta, result.events);

    std::cout << "# phase2_omp_overlap: " << config.workload << " workload, " << config.chunks << " chunks, "
              << config.compute_threads() << " compute thread(s) + 1 comm thread, median of " << config.common.iters
              << " iterations (steady_clock)\n"
              << ob::render_summary(result.rows, phase2::console_columns());
    if (const auto* bound = ob::find_row(result.rows, ob::Mode::kBound)) {
      std::cout << "# model (bound row): " << bound->time_ms.p50 << " ms\n";
    }
    std::cout << ob::outputs_line(paths, passed) << "\n";
    if (result.wrong > 0) throw ob::CheckFailure(std::to_string(result.wrong) + " wrong elements; first: " + result.first_wrong);
    return ob::kExitOk;
  });
}
