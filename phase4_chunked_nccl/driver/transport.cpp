#include "phase4_chunked_nccl/driver/transport.hpp"

#include <cstdlib>

namespace phase4 {

std::vector<std::pair<std::string, std::string>> transport_environment(Transport transport) {
  switch (transport) {
    case Transport::kNvlink: return {};
    case Transport::kShm: return {{"NCCL_P2P_DISABLE", "1"}};
    case Transport::kSocket:
      return {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}, {"NCCL_NET", "Socket"}, {"NCCL_SOCKET_IFNAME", "lo"}};
  }
  return {};
}

void apply_transport(Transport transport) {
  for (const auto& [name, value] : transport_environment(transport)) setenv(name.c_str(), value.c_str(), 1);
}

}  // namespace phase4
