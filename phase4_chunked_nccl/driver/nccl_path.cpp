#include "phase4_chunked_nccl/driver/nccl_path.hpp"

#include <algorithm>
#include <regex>
#include <sstream>

namespace phase4 {

nlohmann::json NcclPath::to_json() const {
  return {{"version", version},
          {"network", network},
          {"transports", transports},
          {"coll_channels", coll_channels},
          {"p2p_channels", p2p_channels},
          {"copy_engine", copy_engine},
          {"registrations", registrations}};
}

NcclPath parse_nccl_log(const std::string& log) {
  static const std::regex version(R"(NCCL INFO NCCL version (\S+))");
  static const std::regex network(R"(NCCL INFO Using network (\S+))");
  static const std::regex via(R"(NCCL INFO Channel \d+(/\d+)? : .* via (\S+))");  // SHM's lines name no /connection
  static const std::regex channels(R"(NCCL INFO (\d+) coll channels, .* (\d+) p2p channels,)");
  NcclPath path;
  std::istringstream lines(log);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (line.find("NCCL INFO ") == std::string::npos) continue;
    if (std::regex_search(line, m, version)) {
      path.version = m[1];
    } else if (std::regex_search(line, m, network)) {
      path.network = m[1];
    } else if (std::regex_search(line, m, via)) {
      if (std::find(path.transports.begin(), path.transports.end(), m[2].str()) == path.transports.end()) {
        path.transports.push_back(m[2]);
      }
    } else if (std::regex_search(line, m, channels)) {
      path.coll_channels = std::stoi(m[1]);
      path.p2p_channels = std::stoi(m[2]);
    } else if (line.find("NCCL INFO Init CE") != std::string::npos) {
      path.copy_engine = true;
    } else if (line.find("NCCL INFO register comm") != std::string::npos) {
      ++path.registrations;
    }
  }
  std::sort(path.transports.begin(), path.transports.end());
  return path;
}

std::vector<std::pair<std::string, std::string>> nccl_log_environment(const std::string& file) {
  return {{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "INIT,P2P,SHM,NET,REG"}, {"NCCL_DEBUG_FILE", file}};
}

}  // namespace phase4
