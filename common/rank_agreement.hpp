// Every rank of an MPI job runs on the same configuration, or none runs. Options are parsed and validated on every
// rank; a usage error on any rank (however the ranks' command lines came to differ: MPMD launches, per-rank
// wrappers) ends every rank with exit 2 within a collective or two, printed by the first rank that found it. Then the
// ranks compare their parsed options (every option's value, CLI11's config_to_str) and the binary's commit: a
// difference is a usage error naming the option and both values. All before any allocation.
#pragma once

#include <CLI/CLI.hpp>
#include <mpi.h>

#include <functional>
#include <optional>
#include <string>

namespace ob {

// parse_options() for an MPI job: returns nothing when every rank goes on with equal options; otherwise the exit
// code every rank returns at once (0 after --help, kExitUsage). `validate` runs after a good parse and may throw
// UsageError (the phase's cross-option checks, its output paths).
std::optional<int> parse_on_every_rank(CLI::App& app, int argc, char** argv, MPI_Comm comm,
                                       const std::function<void()>& validate);

// A problem found on some ranks (this rank's, or "" for none) stops every rank: kExitUsage on all of them, the
// message printed once, by the first rank that has it ("<program>: error: <problem> (rank N)"). Nothing when no rank
// has one. A collective: every rank calls it.
std::optional<int> stop_on_any_rank(const std::string& program, const std::string& problem, MPI_Comm comm);

// The first difference between two ranks' option texts ("name=value" lines), as "--name: rank A has x, rank B has
// y"; "" when they are equal.
std::string first_difference(const std::string& a, int rank_a, const std::string& b, int rank_b);

}  // namespace ob
