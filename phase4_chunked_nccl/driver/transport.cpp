#include "phase4_chunked_nccl/driver/transport.hpp"

#include <cstdlib>

#include "common/errors.hpp"

namespace phase4 {

std::vector<std::pair<std::string, std::string>> transport_environment(Transport transport) {
  switch (transport) {
    case Transport::kNvlink: return {};
    case Transport::kShm: return {{"NCCL_P2P_DISABLE", "1"}};
    case Transport::kSocket:
      return {
          {"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}, {"NCCL_NET", "Socket"}, {"NCCL_SOCKET_IFNAME", "lo"}};
  }
  return {};
}

int node_of_rank(int rank, int ranks, int nodes) {
  ob::require(nodes >= 1 && ranks % nodes == 0, "--emulate-nodes", std::to_string(nodes),
              "a divisor of the " + std::to_string(ranks) + " ranks (each node the same number of GPUs)");
  return rank / (ranks / nodes);
}

std::string emulated_host_id(int node) { return "overlap-bench-node-" + std::to_string(node); }

std::vector<std::pair<std::string, std::string>> socket_environment(int threads, int socks_per_thread) {
  std::vector<std::pair<std::string, std::string>> variables;
  if (threads > 0) variables.emplace_back("NCCL_SOCKET_NTHREADS", std::to_string(threads));
  if (socks_per_thread > 0) variables.emplace_back("NCCL_NSOCKS_PERTHREAD", std::to_string(socks_per_thread));
  return variables;
}

void apply_transport(Transport transport, int socket_threads, int socks_per_thread) {
  auto variables = transport_environment(transport);
  for (const auto& variable : socket_environment(socket_threads, socks_per_thread)) variables.push_back(variable);
  for (const auto& [name, value] : variables) setenv(name.c_str(), value.c_str(), 1);
}

}  // namespace phase4
