#include "common/rank_agreement.hpp"

#include <omp.h>

#include <iostream>
#include <sstream>
#include <vector>

#include "common/errors.hpp"
#include "common/metadata.hpp"
#include "common/mpi_check.hpp"
#include "common/mpi_session.hpp"
#include "common/options.hpp"

namespace ob {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int min_over_ranks(int value, MPI_Comm comm) {
  int least = value;
  MPI_CHECK(MPI_Allreduce(&value, &least, 1, MPI_INT, MPI_MIN, comm));
  return least;
}

}  // namespace

namespace {
// Two lines of config_to_str that say the same: equal text, or one key with values equal as numbers ("100" and
// "1e2"; lists item by item), as the ranks would parse them.
bool same_setting(const std::string& l, const std::string& r) {
  if (l == r) return true;
  const auto el = l.find('='), er = r.find('=');
  if (el == std::string::npos || er == std::string::npos || l.substr(0, el) != r.substr(0, er)) return false;
  std::string vl = l.substr(el + 1), vr = r.substr(er + 1);
  for (std::string* v : {&vl, &vr}) {
    if (v->size() >= 2 && v->front() == '"' && v->back() == '"') *v = v->substr(1, v->size() - 2);
  }
  const auto il = split_list(vl, ','), ir = split_list(vr, ',');
  if (il.empty() || il.size() != ir.size()) return false;
  for (std::size_t k = 0; k < il.size(); ++k) {
    const auto nl = parse_number(il[k]), nr = parse_number(ir[k]);
    if (il[k] != ir[k] && !(nl && nr && *nl == *nr)) return false;
  }
  return true;
}
}  // namespace

std::string first_difference(const std::string& a, int rank_a, const std::string& b, int rank_b) {
  const auto left = lines_of(a), right = lines_of(b);
  for (std::size_t i = 0; i < std::max(left.size(), right.size()); ++i) {
    const std::string l = i < left.size() ? left[i] : "", r = i < right.size() ? right[i] : "";
    if (same_setting(l, r)) continue;
    const std::string line = l.empty() ? r : l;
    const std::string key = line.substr(0, line.find('='));
    auto value = [&](const std::string& text) {
      const auto equals = text.find('=');
      return equals == std::string::npos ? std::string("(nothing)") : text.substr(equals + 1);
    };
    const std::string name = key == "commit" ? "the binary's commit"
        : key == "OMP_NUM_THREADS"           ? "the OpenMP threads (OMP_NUM_THREADS, --threads 0)"
                                             : "--" + key;
    return name + ": rank " + std::to_string(rank_a) + " has " + value(l) + ", rank " + std::to_string(rank_b) +
        " has " + value(r);
  }
  return "";
}

std::optional<int> stop_on_any_rank(const std::string& program, const std::string& problem, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  const int first = min_over_ranks(problem.empty() ? size : rank, comm);
  if (first == size) return std::nullopt;
  if (rank == first) {
    std::cerr << program << ": error: " << problem << (size > 1 ? " (rank " + std::to_string(rank) + ")" : "")
              << std::endl;
  }
  return kExitUsage;
}

std::optional<int> parse_on_every_rank(CLI::App& app, int argc, char** argv, MPI_Comm comm,
                                       const std::function<void()>& validate) {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  ParseOutcome outcome = parse_quietly(app, argc, argv);
  std::string problem = outcome.error;
  if (!outcome.exit) {
    try {
      validate();
    } catch (const UsageError& error) {
      outcome.exit = kExitUsage;
      problem = error.what();
    }
  }
  // A usage error anywhere: the first rank that has one says it, every rank stops.
  if (auto code = stop_on_any_rank(app.get_name(), outcome.exit == kExitUsage ? problem : "", comm)) return code;
  // --help on any rank: the first rank that asked prints it, every rank stops.
  const int first_help = min_over_ranks(outcome.exit == kExitOk ? rank : size, comm);
  if (first_help < size) {
    if (rank == first_help) std::cout << outcome.help << std::flush;
    return kExitOk;
  }
  // Equal options and the same build on every rank.
  // The environment's part too: OMP_NUM_THREADS sizes a rank's team where --threads leaves it to the default (an
  // MPMD launch giving ranks different ones would run, and be recorded as, one configuration it is not).
  const std::string mine = app.config_to_str(true, false) + "commit=" + build_commit() +
      "\nOMP_NUM_THREADS=" + std::to_string(omp_get_max_threads()) + "\n";
  const auto all = gather_strings(mine, comm, 0);
  std::string mismatch;
  for (int r = 1; rank == 0 && r < size && mismatch.empty(); ++r) mismatch = first_difference(all[0], 0, all[r], r);
  int length = static_cast<int>(mismatch.size());
  MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, 0, comm));
  if (length == 0) return std::nullopt;
  if (rank == 0) std::cerr << app.get_name() << ": error: the ranks disagree on " << mismatch << std::endl;
  return kExitUsage;
}

}  // namespace ob
