#include "common/mpi_phase.hpp"

#include <cstdlib>
#include <iostream>
#include <memory>

#include "common/errors.hpp"
#include "common/main_guard.hpp"
#include "common/metadata.hpp"
#include "common/mpi_session.hpp"
#include "common/options.hpp"
#include "common/rank_agreement.hpp"

namespace ob {

namespace {
// Whether no launcher started this process as a rank of a job (mpirun, srun, hydra put its rank in the environment).
bool launched_alone() {
  for (const char* variable :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_SIZE"}) {
    if (std::getenv(variable) != nullptr) return false;
  }
  return true;
}
}  // namespace

int run_mpi_phase(int argc, char** argv, const MpiPhase& phase) {
  std::unique_ptr<MpiSession> mpi;  // outlives guarded_main, so a failure can still MPI_Abort the job
  return guarded_main(
      phase.program,
      [&]() -> int {
        // A process started alone refuses a bad option before MPI_Init, which alone starts Open MPI's daemon (most of
        // a second): no work before a usage error. Under a launcher every rank parses after it (parse_on_every_rank:
        // one line from the first rank that finds the error).
        if (launched_alone()) {
          CLI::App early(phase.description, phase.program);
          phase.add_options(early);
          const ParseOutcome outcome = parse_quietly(early, argc, argv);
          if (outcome.exit == kExitUsage) {
            std::cerr << phase.program << ": error: " << outcome.error << std::endl;
            return kExitUsage;
          }
        }
        mpi = std::make_unique<MpiSession>(argc, argv, phase.thread_level);
        CLI::App app(phase.description, phase.program);
        phase.add_options(app);
        OutputPaths paths;
        std::unique_ptr<Watchdog> watchdog;
        const auto on_stall = phase.on_stall;
        if (auto code = parse_on_every_rank(app, argc, argv, MPI_COMM_WORLD, [&] {
              phase.validate(app);
              paths = resolve_output_paths(phase.name, *phase.common,
                                           phase.inputs ? phase.inputs() : std::vector<NamedPath>{});
              // Started on this rank's own options, before the ranks agree on theirs: a rank lost at start-up must not
              // hold the others in that agreement's collectives for ever.
              watchdog = std::make_unique<Watchdog>(phase.program, mpi->rank(), mpi->size(), *phase.fault, [on_stall] {
                if (on_stall) on_stall();
                MPI_Abort(MPI_COMM_WORLD, kExitRuntime);
              });
            })) {
          return *code;
        }
        progress_note("set-up");
        const bool root = mpi->rank() == 0;
        const PhaseContext context{mpi.get(), mpi->rank(), mpi->size(),
                                   root,      paths,       root && !phase.common->quiet ? &std::cerr : nullptr};
        auto outcome = phase.run(context);
        if (const int* code = std::get_if<int>(&outcome)) return *code;
        PhaseResult& result = std::get<PhaseResult>(outcome);
        // A fault injected at a step that never came proved nothing: a usage error, and nothing is written.
        if (auto code = stop_on_any_rank(phase.program, watchdog->unfired_fault(), MPI_COMM_WORLD)) return *code;
        nlohmann::json gathered = {{"hosts", rank_hosts(MPI_COMM_WORLD)},
                                   {"rank_command_lines", rank_command_lines(argc, argv, MPI_COMM_WORLD)}};
        const nlohmann::json devices = gather_json(result.device, MPI_COMM_WORLD);
        if (!result.device.is_null()) gathered["gpus"] = devices;  // every rank's GPU, in rank order
        if (root) report_phase(argc, argv, phase, paths, result, gathered);
        if (!result.failure.empty()) {
          if (root) throw CheckFailure(result.failure);
          return kExitCheckFailed;
        }
        return kExitOk;
      },
      true);
}

}  // namespace ob
