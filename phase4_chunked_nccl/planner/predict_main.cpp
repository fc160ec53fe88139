// phase4_predict: the planner's what-if, on the CPU. From a calibration that phase4_chunked_nccl measured (on a few
// GPUs of one node), the predicted overlapped step of the same model on N ranks, with the best bucket plan at each
// point (METRICS.md, "The planner"), for GPUs joined within a node by the calibrated link and across nodes by a
// given network; and the PyTorch DDP bucket_cap_mb the model predicts best on the calibrated ranks.
// scripts/predict.py runs it and draws the scaling plot.
#include <CLI/CLI.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "common/main_guard.hpp"
#include "common/metadata.hpp"
#include "phase4_chunked_nccl/schedule/bucket_plan.hpp"
#include "common/options.hpp"
#include "phase4_chunked_nccl/planner/planner.hpp"

namespace {

// A network between nodes: bandwidth per GPU and latency per hop.
struct Link {
  std::string name;
  double gbps = 0, latency_us = 0;
};

const std::vector<Link>& link_presets() {
  static const std::vector<Link> presets = {
      {"ib400", 50.0, 5.0},    // one 400 Gb/s InfiniBand NIC per GPU
      {"eth100", 12.5, 20.0},  // one 100 Gb/s Ethernet (RoCE) NIC per GPU
  };
  return presets;
}

// "ib400", "eth100" or NAME:GB/s:us.
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
// the cheaper of a ring ((n - 1) alpha + 2 (n - 1) / n bytes / beta) and a tree (log2(n) alpha + bytes / beta).
// Across nodes (ranks > per_node) alpha is at least the link's hop latency and beta at most its bandwidth.
phase4::CommTime scaled_comm(const phase4::StrategyCalibration& s, int calibrated_ranks, int ranks, int per_node,
                             const Link& link) {
  return [&s, calibrated_ranks, ranks, per_node, link](double bytes) {
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
    const double tree = std::log2(n) * alpha + bytes * per_byte * 2 * (n0 - 1) / n0;
    return std::min(ring, tree);
  };
}

}  // namespace

int main(int argc, char** argv) {
  const std::string program = "phase4_predict";
  return ob::guarded_main(program, [&]() -> int {
    CLI::App app("The planner's what-if: predicted step and best bucket plan on N ranks, from a calibration", program);
    std::string calibration_path, csv, links_text = "ib400,eth100", ranks_text = "2,4,8,16,32,64,128,256,512,1024";
    std::string sync;
    int per_node = 8;
    double bucket_mb = 0, first_bucket_mb = 1.0;
    app.add_option("--calibration", calibration_path, "A calibration written by phase4_chunked_nccl --calibrate")
        ->required();
    app.add_option("--ranks", ranks_text, "Rank counts, comma-separated (each >= 2)")->capture_default_str();
    app.add_option("--links", links_text,
                   "Networks between nodes, comma-separated: ib400 (50 GB/s, 5 us per GPU), eth100 (12.5 GB/s, "
                   "20 us) or NAME:GBPS:LATENCY_US")
        ->capture_default_str();
    app.add_option("--gpus-per-node", per_node, "GPUs per node joined by the calibrated link")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    app.add_option("--sync", sync, "Predict this calibrated strategy only (default: the best at each point)");
    auto* fixed = app.add_option("--bucket-mb", bucket_mb,
                                 "Predict this plan instead of the best one: buckets of at most this many MiB, as "
                                 "phase 4's --bucket-mb (to compare with a measured run of that plan)");
    app.add_option("--first-bucket-mb", first_bucket_mb, "With --bucket-mb: the first bucket's cap, as phase 4's")
        ->needs(fixed)
        ->capture_default_str();
    app.add_option("--csv", csv, "Write the prediction here (default: stdout)");
    app.set_version_flag("--version", ob::version_text(program), "Print the version, commit and build, then exit");
    if (auto code = ob::parse_options(app, argc, argv, true)) return *code;

    std::vector<int> ranks;
    for (const auto& item : ob::split_list(ranks_text)) {
      const auto value = ob::parse_number(item);
      ob::require(value && *value >= 2 && *value <= (1 << 20) && *value == std::floor(*value), "--ranks", ranks_text,
                  "whole numbers from 2 to 1048576, comma-separated");
      ranks.push_back(static_cast<int>(*value));
    }
    ob::require(!ranks.empty(), "--ranks", ranks_text, "whole numbers from 2, comma-separated");
    std::vector<Link> links;
    for (const auto& item : ob::split_list(links_text)) links.push_back(parse_link(item));
    ob::require(!links.empty(), "--links", links_text, "ib400, eth100 or NAME:GBPS:LATENCY_US");
    if (!csv.empty()) {
      ob::require_writable_parent("--csv", csv);
      ob::require_output_policy({{"--csv", csv}}, {{"--calibration", calibration_path}});
    }
    for (const auto& [name, value] : {std::pair{"--bucket-mb", bucket_mb}, {"--first-bucket-mb", first_bucket_mb}}) {
      ob::require(!fixed->count() || (value > 0 && std::isfinite(value)), name, ob::format_number(value),
                  "a size > 0 in MiB");
    }

    std::ifstream file(calibration_path);
    ob::require(file.good(), "--calibration", calibration_path, "a readable calibration file");
    std::stringstream text;
    text << file.rdbuf();
    const auto calibration = phase4::Calibration::parse(text.str(), calibration_path);
    if (fixed->count()) {
      phase4::require_bucket_count("--bucket-mb", bucket_mb, calibration.layers, calibration.hidden);
      phase4::require_bucket_count("--first-bucket-mb", first_bucket_mb, calibration.layers, calibration.hidden);
    }
    std::vector<std::string> syncs;
    if (!sync.empty()) {
      ob::require(calibration.strategy(sync) != nullptr, "--sync", sync, "a strategy the calibration holds");
      syncs.push_back(sync);
    }

    ob::CsvTable table({"link", "ranks", "nodes", "sync", "predicted_ms", "buckets", "first_bucket_mb",
                        "largest_bucket_mb", "slowdown", "extrapolated", "ddp_bucket_cap_mb", "ddp_predicted_ms",
                        "calibrated_gpu", "calibrated_ranks", "calibration_commit"});
    auto mb = [](std::uint64_t elements) { return ob::format_number(elements * 4.0 / (1 << 20), 4); };
    // DDP's plan for a cap: a 1 MiB first bucket, then buckets of the cap; the cap predicted best.
    auto best_ddp_cap = [&](const phase4::StrategyCalibration& s, const phase4::CommTime& comm, double* best_ms) {
      double best_cap = 25;
      *best_ms = INFINITY;
      for (double cap : phase4::kCandidateCapsMb) {
        const auto plan = phase4::plan_by_size(calibration.layers, calibration.hidden, cap, 1.0);
        const double ms = phase4::predict(calibration, s, plan, comm).step_ms;
        if (ms < *best_ms) *best_ms = ms, best_cap = cap;
      }
      return best_cap;
    };
    for (const auto& link : links) {
      for (int n : ranks) {
        std::vector<phase4::CommTime> comms;
        for (const auto& s : calibration.strategies) {
          comms.push_back(scaled_comm(s, calibration.ranks, n, per_node, link));
        }
        // The best plan of each strategy under its scaled communication; the best strategy first.
        const phase4::PlanChoice* best = nullptr;
        std::vector<phase4::PlanChoice> kept;
        for (std::size_t k = 0; k < calibration.strategies.size(); ++k) {
          const auto& s = calibration.strategies[k];
          if (!syncs.empty() && s.sync != syncs[0]) continue;
          if (fixed->count()) {  // the given plan
            const auto plan = phase4::plan_by_size(calibration.layers, calibration.hidden, bucket_mb, first_bucket_mb);
            kept.push_back({s.sync, plan, phase4::predict(calibration, s, plan, comms[k])});
          } else {
            kept.push_back(phase4::choose_plans(calibration, {s.sync}, comms[k]).front());
          }
        }
        for (const auto& choice : kept) {
          if (!best || choice.prediction.step_ms < best->prediction.step_ms) best = &choice;
        }
        const auto* strategy = calibration.strategy(best->sync);
        const std::size_t index = static_cast<std::size_t>(strategy - calibration.strategies.data());
        double ddp_ms = 0;
        const double cap = best_ddp_cap(*strategy, comms[index], &ddp_ms);
        std::uint64_t largest = 0;
        for (const auto& b : best->plan.buckets) largest = std::max(largest, b.size());
        table.add_row({link.name, std::to_string(n), std::to_string((n + per_node - 1) / per_node), best->sync,
                       ob::format_number(best->prediction.step_ms, 6), std::to_string(best->plan.buckets.size()),
                       mb(best->plan.buckets.front().size()), mb(largest),
                       ob::format_number(best->prediction.slowdown, 4), best->prediction.extrapolated ? "1" : "0",
                       ob::format_number(cap), ob::format_number(ddp_ms, 6), calibration.gpu,
                       std::to_string(calibration.ranks), calibration.commit});
      }
    }
    if (csv.empty()) {
      std::cout << table.to_string();
    } else {
      ob::write_file_atomic(csv, table.to_string());
      std::cerr << program << ": wrote " << csv << " (" << table.rows().size() << " points)" << std::endl;
    }
    return ob::kExitOk;
  });
}
