#include "common/phase_runner.hpp"

#include <iostream>

#include "common/errors.hpp"
#include "common/main_guard.hpp"
#include "common/metadata.hpp"

namespace ob {

void report_phase(int argc, char** argv, const Phase& phase, const OutputPaths& paths, PhaseResult& result,
                  const nlohmann::json& gathered) {
  auto meta = base_metadata(phase.name, argc, argv);
  for (const auto& [key, value] : gathered.items()) meta[key] = value;
  for (const auto& [key, value] : result.meta.items()) meta[key] = value;
  const bool passed = result.failure.empty();
  if (passed) {
    write_run_outputs(paths, phase.name, result.rows, meta, result.events, result.power ? &*result.power : nullptr,
                      result.extra_files);
  }
  std::cout << "# " << result.header << "\n"
            << (result.table.empty() ? render_summary(result.rows, result.columns) : result.table)
            << outputs_line(paths, passed) << "\n";
  for (const auto& note : result.notes) {
    if (passed) std::cout << note << "\n";
  }
}

int run_phase(int argc, char** argv, const Phase& phase) {
  return guarded_main(phase.program, [&]() -> int {
    CLI::App app(phase.description, phase.program);
    phase.add_options(app);
    if (auto code = parse_options(app, argc, argv, true)) return *code;
    phase.validate(app);
    const OutputPaths paths =
        resolve_output_paths(phase.name, *phase.common, phase.inputs ? phase.inputs() : std::vector<NamedPath>{});
    Watchdog watchdog(phase.program, 0, 1, *phase.fault, phase.on_stall);  // it ends the run after its message
    progress_note("set-up");
    const PhaseContext context{nullptr, 0, 1, true, paths, phase.common->quiet ? nullptr : &std::cerr};
    auto outcome = phase.run(context);
    if (const int* code = std::get_if<int>(&outcome)) return *code;
    PhaseResult& result = std::get<PhaseResult>(outcome);
    // A fault injected at a step that never came proved nothing: a usage error, and nothing is written.
    const std::string unfired = watchdog.unfired_fault();
    if (!unfired.empty()) throw UsageError(unfired);
    nlohmann::json gathered = nlohmann::json::object();
    if (!result.device.is_null()) gathered["gpus"] = nlohmann::json::array({result.device});
    report_phase(argc, argv, phase, paths, result, gathered);
    if (!result.failure.empty()) throw CheckFailure(result.failure);
    return kExitOk;
  });
}

}  // namespace ob
