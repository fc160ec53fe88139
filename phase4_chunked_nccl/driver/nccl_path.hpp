// --nccl-path (METRICS.md, "Metadata JSON", nccl_path): the path NCCL actually took, read from its own INFO log, so
// that a silent fallback (peer to peer asked, shared memory or sockets taken; copy engines asked, kernels run) shows
// in the result. NCCL writes the log of each process to a file of its own (NCCL_DEBUG_FILE) while the run goes; the
// run's metadata carries rank 0's account.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace phase4 {

struct NcclPath {
  std::string version, network;  // "2.28.3+cuda13.0"; the network plugin in use ("Socket", "IB")
  std::vector<std::string> transports;  // each distinct "via" of its channels: "P2P/CUMEM/read", "SHM/direct/direct"
  int coll_channels = -1, p2p_channels = -1;  // -1: not said
  bool copy_engine = false;  // "Init CE": collectives on the copy engines set up
  int registrations = 0;  // buffers registered with the communicator (symmetric windows)
  nlohmann::json to_json() const;
};

// What the INFO lines of `log` say (other lines are ignored).
NcclPath parse_nccl_log(const std::string& log);

// The variables that make NCCL write this process's INFO log to `file` (NCCL_DEBUG, NCCL_DEBUG_SUBSYS,
// NCCL_DEBUG_FILE); set before the first NCCL call.
std::vector<std::pair<std::string, std::string>> nccl_log_environment(const std::string& file);

}  // namespace phase4
