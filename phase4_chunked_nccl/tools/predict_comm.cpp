// phase4_predict's communication at another rank count (predict_comm.hpp).
#include "phase4_chunked_nccl/tools/predict_comm.hpp"

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"
#include "common/options.hpp"
#include "phase4_chunked_nccl/core/schedules.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"

namespace phase4 {

namespace {

const std::vector<Link>& link_presets() {
  static const std::vector<Link> presets = {
      {"ib400", 50.0, 5.0},  // one 400 Gb/s InfiniBand NIC per GPU
      {"eth100", 12.5, 20.0},  // one 100 Gb/s Ethernet (RoCE) NIC per GPU
  };
  return presets;
}

}  // namespace

Link parse_link(const std::string& text) {
  for (const auto& preset : link_presets()) {
    if (preset.name == text) return preset;
  }
  const auto parts = ob::split_list(text, ':');
  const std::string allowed = "ib400, eth100 or NAME:GBPS:LATENCY_US (both > 0)";
  ob::require(parts.size() == 3, "--links", text, allowed);
  const auto gbps = ob::parse_number(parts[1]), latency = ob::parse_number(parts[2]);
  ob::require(gbps && latency && *gbps > 0 && *latency > 0, "--links", text, allowed);
  return {parts[0], *gbps, *latency};
}

// The calibrated 2-rank fit, taken apart as alpha (latency) + bytes / beta at each size, rebuilt for `ranks` ranks:
// the cheaper of a ring ((n - 1) alpha + 2 (n - 1) / n bytes / beta) and a tree (log2(n) alpha + bytes / beta
// within a node: on NVSwitch 4 ranks' all-reduces took about 2 ranks' time per byte in round 1; with NCCL 2.28 on
// 4 x H200, 1.28-1.40 times it, which --comm gives where it was measured; across nodes the same bandwidth term as the
// ring's: the link carries no fewer bytes per rank, and bytes / beta predicted 2 x 2 emulated nodes' steps a third
// fast).
// Across nodes (ranks > per_node) alpha is at least the link's hop latency and beta at most its bandwidth. A sharded
// strategy's reduce-scatters (and all-to-alls) have no tree: the ring's (n - 1) / n share scales them.
CommTime scaled_comm(const StrategyCalibration& s, int calibrated_ranks, int ranks, int per_node, const Link& link) {
  const bool ring_only = sync_row(s.sync).ring_only;
  return [&s, calibrated_ranks, ranks, per_node, link, ring_only](double bytes) {
    auto [intercept, slope] = s.comm_line_at(bytes);
    slope = std::max(slope, 1e-15);
    const double n0 = calibrated_ranks;
    // At the calibrated ranks a ring: t = (n0 - 1) alpha + 2 (n0 - 1) / n0 bytes / beta.
    double alpha = std::max(0.0, intercept) / std::max(1.0, n0 - 1);
    double per_byte = slope / (2 * (n0 - 1) / n0);
    if (ranks > per_node) {
      alpha = std::max(alpha, link.latency_us * 1e-3);
      per_byte = std::max(per_byte, 1.0 / (link.gbps * 1e6));  // GB/s -> bytes per ms
    }
    const double n = ranks;
    const double ring = (n - 1) * alpha + 2 * (n - 1) / n * bytes * per_byte;
    const double tree =
        std::log2(n) * alpha + bytes * per_byte * (ranks > per_node ? 2 * (n - 1) / n : 2 * (n0 - 1) / n0);
    return ring_only ? ring : std::min(ring, tree);
  };
}

// Whether a strategy runs where ranks span nodes: those that need the GPUs' peer access (symmetric windows, copy
// engines) do not (phase 4 refuses them on --transport shm and socket too).
bool runs_across_nodes(const std::string& sync) {
  const SyncRow* row = find_sync(sync);
  return !row || !row->peer_access;
}

MeasuredComm parse_measured_comm(const std::string& text) {
  const std::string allowed =
      "SYNC@RANKS:MIB=MS,MIB=MS,... (a strategy of all-reduces, ranks >= 2, two sizes or "
      "more in increasing order, times > 0)";
  MeasuredComm m;
  const auto at = text.find('@'), colon = text.find(':');
  ob::require(at != std::string::npos && colon != std::string::npos && at < colon, "--comm", text, allowed);
  m.sync = text.substr(0, at);
  const auto ranks = ob::parse_number(text.substr(at + 1, colon - at - 1));
  const SyncRow* row = find_sync(m.sync);
  ob::require(row != nullptr && ranks && *ranks >= 2 && *ranks <= (1 << 20) && *ranks == std::floor(*ranks), "--comm",
              text, allowed);
  ob::require(schedule_row(row->schedule).parts.empty(), "--comm", text,
              "a strategy whose schedule times parts of its own (" + row->schedule +
                  ") has its communication calibrated per layer: " + allowed);
  m.ranks = static_cast<int>(*ranks);
  for (const auto& pair : ob::split_list(text.substr(colon + 1))) {
    const auto equals = pair.find('=');
    const auto mib = ob::parse_number(pair.substr(0, equals)),
               ms = ob::parse_number(equals == std::string::npos ? "" : pair.substr(equals + 1));
    ob::require(mib && ms && *mib > 0 && *mib <= 1e9 && *ms > 0 && *ms <= 1e9 &&
                    (m.times.bytes.empty() || *mib * (1 << 20) > m.times.bytes.back()),
                "--comm", text, allowed);
    m.times.bytes.push_back(*mib * (1 << 20));
    m.times.comm_ms.push_back(*ms);
  }
  ob::require(m.times.bytes.size() >= 2, "--comm", text, allowed);
  m.times.sync = m.sync;
  return m;
}

CommTime measured_comm(const MeasuredComm& measured) {
  return [times = measured.times](double bytes) { return times.comm_ms_at(bytes); };
}

// A sharded strategy's reduce-scatters (and, but for copy-engine ones, its all-gathers: planner.cpp, gather_scale)
// rise with the rank count as the all-reduce on their engines does, not as a ring's (n - 1) / n share: on 4 x H100
// (NCCL 2.28, 64 MiB-1 GiB) sharded-ce's reduction took 1.33-1.36 times its 2 ranks' time and ce's all-reduce
// 1.30-1.35, where the ring's share says 1.5; the twin's rise brought the 2-GPU calibrations' predictions of
// sharded-ce on 4096,16,512 from 13-20 % high to within 8 % (results/4xH100/planner).
CommTime comm_at(const Calibration& c, const StrategyCalibration& s, int ranks, int per_node, const Link& link,
                 const std::vector<MeasuredComm>& measured, std::string* used) {
  std::string none;
  if (!used) used = &none;
  *used = "";
  for (const auto& m : measured) {
    if (m.sync == s.sync && m.ranks == ranks) {
      *used = m.sync;
      return measured_comm(m);
    }
  }
  const SyncRow* row = find_sync(s.sync);
  const StrategyCalibration* twin = row && !row->scales_as.empty() ? c.strategy(row->scales_as) : nullptr;
  for (const auto& m : measured) {
    if (twin && m.sync == twin->sync && m.ranks == ranks) {
      *used = m.sync;
      return [&s, twin, times = m.times](double bytes) {
        return s.comm_ms_at(bytes) * times.comm_ms_at(bytes) / std::max(twin->comm_ms_at(bytes), 1e-9);
      };
    }
  }
  return scaled_comm(s, c.ranks, ranks, per_node, link);
}

}  // namespace phase4
