// phase4_predict: the planner's what-if, on the CPU. From a calibration that phase4_chunked_nccl measured (on a few
// GPUs of one node), the predicted overlapped step of the same model on N ranks, with the best bucket plan at each
// point (METRICS.md, "The planner"), for GPUs joined within a node by the calibrated link and across nodes by a
// given network; and the PyTorch DDP bucket_cap_mb the model predicts best on the calibrated ranks. With --model, the
// same for a transformer, its compute estimated from the calibration's GEMM rates (model_estimate.hpp); --layers-csv
// writes its backward steps with the chosen buckets. overlap_bench/planner/predict.py runs it and draws the plots.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/csv_schema.hpp"
#include "common/csv_writer.hpp"
#include "common/errors.hpp"
#include "common/main_guard.hpp"
#include "common/metadata.hpp"
#include "common/options.hpp"
#include "common/path_options.hpp"
#include "phase4_chunked_nccl/planner/model_estimate.hpp"
#include "phase4_chunked_nccl/planner/planner.hpp"
#include "phase4_chunked_nccl/core/bucket_plan.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"
#include "phase4_chunked_nccl/tools/predict_comm.hpp"

namespace {

using phase4::Link;

// What the command line asks.
struct Options {
  std::string calibration_path, csv, links_text = "ib400,eth100", ranks_text = "2,4,8,16,32,64,128,256,512,1024";
  std::string sync, model, layers_csv;
  std::vector<std::string> comm;  // --comm: strategies' bucket times measured on the predicted ranks
  int per_node = 8, seq = 2048, micro_batch = 1, blocks = 0;
  double bucket_mb = 0, first_bucket_mb = 1.0, ddp_min_cap_mb = 0;
  CLI::Option* fixed = nullptr;  // --bucket-mb given: predict that plan, not the best one
};

void add_options(CLI::App& app, Options& o) {
  ob::add_input_option(app, "--calibration", o.calibration_path,
                       "A calibration written by phase4_chunked_nccl --calibrate")
      ->required();
  ob::add_list_option(app, "--ranks", o.ranks_text, "Rank counts, comma-separated (each >= 2)")->capture_default_str();
  ob::add_list_option(app, "--links", o.links_text,
                      "Networks between nodes, comma-separated: ib400 (50 GB/s, 5 us per GPU), eth100 (12.5 GB/s, "
                      "20 us) or NAME:GBPS:LATENCY_US")
      ->capture_default_str();
  app.add_option("--gpus-per-node", o.per_node, "GPUs per node joined by the calibrated link")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  std::string twins;  // the sharded strategies and the all-reduce whose rise their collectives take
  for (const auto& row : phase4::sync_rows()) {
    if (!row.scales_as.empty()) twins += (twins.empty() ? "" : ", ") + row.name + ": " + row.scales_as + "'s";
  }
  app.add_option("--comm", o.comm,
                 "A strategy's time per bucket measured on the ranks predicted (a comm-only sweep there, e.g. by "
                 "ob-check-prediction --comm-from): SYNC@RANKS:MIB=MS,MIB=MS,...; used instead of the calibrated "
                 "time scaled to those ranks, and as the rise of a sharded strategy's collectives (" +
                     twins + ") (repeatable)");
  app.add_option("--sync", o.sync, "Predict this calibrated strategy only (default: the best at each point)");
  o.fixed = app.add_option("--bucket-mb", o.bucket_mb,
                           "Predict this plan instead of the best one: buckets of at most this many MiB, as "
                           "phase 4's --bucket-mb (to compare with a measured run of that plan)");
  app.add_option("--first-bucket-mb", o.first_bucket_mb, "With --bucket-mb: the first bucket's cap, as phase 4's")
      ->needs(o.fixed)
      ->capture_default_str();
  app.add_option("--ddp-min-cap-mb", o.ddp_min_cap_mb,
                 "DDP's best bucket_cap_mb among the candidate caps of at least this many MiB only (ob-analyze: "
                 "where the host paces the step)")
      ->check(CLI::Range(0.0, 1024.0))
      ->capture_default_str();
  ob::add_output_option(app, "--csv", o.csv, "Write the prediction here (default: stdout)");
  auto* model = app.add_option("--model", o.model,
                               "Predict this transformer instead of the calibrated model: a preset (gpt2, gpt2-xl, "
                               "llama3-8b, qwen2.5-7b) or a config.json; its compute estimated from the calibration");
  app.add_option("--seq", o.seq, "With --model: tokens per sequence")
      ->needs(model)
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--micro-batch", o.micro_batch, "With --model: sequences per rank and step")
      ->needs(model)
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  app.add_option("--blocks", o.blocks, "With --model: its first N blocks only (0: all)")
      ->needs(model)
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  ob::add_output_option(
      app, "--layers-csv", o.layers_csv,
      "Write every backward step (its gradient, its compute, the bucket it ends in) of the best plan on "
      "the calibrated ranks here");
}

// The options checked against each other and against the calibration they name.
struct Inputs {
  std::vector<int> ranks;
  std::vector<Link> links;
  phase4::Calibration calibration;  // with --model: that model's estimate
  std::vector<std::string> step_names;  // the backward steps' names
  std::vector<phase4::MeasuredComm> measured;  // --comm
};

// The backward steps' names of a measured calibration: its transformer's tensors (the model read again by name, its
// blocks those whose tensors have the calibrated sizes), "step N" where that model cannot be read, else the square
// layers' "layer L" ... "layer 1".
std::vector<std::string> measured_step_names(const phase4::Calibration& c) {
  std::vector<std::string> names;
  if (c.step_elements.empty()) {
    for (int l = c.layers; l >= 1; --l) names.push_back("layer " + std::to_string(l));
    return names;
  }
  try {
    const phase4::TransformerShape shape = phase4::load_transformer(c.model);
    for (int blocks = 1; blocks <= shape.layers; ++blocks) {
      const auto tensors = phase4::parameter_tensors(shape, blocks);
      if (tensors.size() != c.step_elements.size()) continue;
      bool same = true;
      for (std::size_t s = 0; s < tensors.size(); ++s)
        same = same && tensors[s].elements() == static_cast<std::int64_t>(c.step_elements[s]);
      if (!same) continue;
      for (const auto& t : tensors) names.push_back(t.name);
      return names;
    }
  } catch (const ob::UsageError&) {  // a config file no longer there: the steps keep their numbers
  }
  for (std::size_t s = 0; s < c.step_elements.size(); ++s) names.push_back("step " + std::to_string(s));
  return names;
}

Inputs read_inputs(const Options& o) {
  Inputs in;
  for (const auto& item : ob::split_list(o.ranks_text)) {
    const auto value = ob::parse_number(item);
    ob::require(value && *value >= 2 && *value <= (1 << 20) && *value == std::floor(*value), "--ranks", o.ranks_text,
                "whole numbers from 2 to 1048576, comma-separated");
    in.ranks.push_back(static_cast<int>(*value));
  }
  ob::require(!in.ranks.empty(), "--ranks", o.ranks_text, "whole numbers from 2, comma-separated");
  for (const int n : in.ranks) {  // nodes of equal size: the layout the calibration's link and the network make
    ob::require(n <= o.per_node || n % o.per_node == 0, "--ranks", o.ranks_text,
                "rank counts above --gpus-per-node " + std::to_string(o.per_node) +
                    " must fill whole nodes of that many GPUs (" + std::to_string(n) + " does not)");
  }
  for (const auto& item : ob::split_list(o.links_text)) in.links.push_back(phase4::parse_link(item));
  ob::require(!in.links.empty(), "--links", o.links_text, "ib400, eth100 or NAME:GBPS:LATENCY_US");
  std::vector<ob::NamedPath> outputs;
  if (!o.csv.empty()) outputs.push_back({"--csv", o.csv});
  if (!o.layers_csv.empty()) outputs.push_back({"--layers-csv", o.layers_csv});
  for (const auto& [option, path] : outputs) ob::require_writable_parent(option, path);
  std::vector<ob::NamedPath> inputs = {{"--calibration", o.calibration_path}};
  if (!o.model.empty()) inputs.push_back({"--model", o.model});
  if (!outputs.empty()) ob::require_output_policy(outputs, inputs);
  std::optional<phase4::ModelWork> work;
  if (!o.model.empty()) {
    work = phase4::ModelWork{phase4::load_transformer(o.model), o.blocks, o.seq, o.micro_batch};
    ob::require(o.blocks <= work->shape.layers, "--blocks", std::to_string(o.blocks),
                "at most the model's " + std::to_string(work->shape.layers) + " blocks");
  }
  for (const auto& [name, value] : {std::pair{"--bucket-mb", o.bucket_mb}, {"--first-bucket-mb", o.first_bucket_mb}}) {
    ob::require(!o.fixed->count() || (value > 0 && value <= phase4::kMostBucketMb), name, ob::format_number(value),
                "a size in MiB in (0, " + ob::format_number(phase4::kMostBucketMb) + "]");
  }
  in.calibration = phase4::Calibration::parse(
      ob::read_input_file("--calibration", o.calibration_path, phase4::kMostCalibrationBytes), o.calibration_path);
  // The what-if splits the calibrated time per bucket into a latency and a bandwidth between two or more ranks.
  ob::require(in.calibration.ranks >= 2, "--calibration", o.calibration_path,
              "a calibration of 2 or more ranks (it holds " + std::to_string(in.calibration.ranks) +
                  "): one rank moves no data to predict others from");
  if (work) {
    in.calibration = phase4::estimate_model(in.calibration, *work);
    in.step_names = phase4::estimate_step_names(*work);
  } else {
    in.step_names = measured_step_names(in.calibration);
  }
  if (o.fixed->count()) {
    const std::uint64_t elements = in.calibration.layout().elements();
    phase4::require_bucket_count("--bucket-mb", o.bucket_mb, elements);
    phase4::require_bucket_count("--first-bucket-mb", o.first_bucket_mb, elements);
  }
  ob::require(o.sync.empty() || in.calibration.strategy(o.sync) != nullptr, "--sync", o.sync,
              "a strategy the calibration holds");
  for (const auto& text : o.comm) {
    const auto m = phase4::parse_measured_comm(text);
    ob::require(in.calibration.strategy(m.sync) != nullptr, "--comm", text, "a strategy the calibration holds");
    // each measurement used, and used alone: one for a strategy on ranks the prediction covers, never two
    ob::require(std::find(in.ranks.begin(), in.ranks.end(), m.ranks) != in.ranks.end(), "--comm", text,
                "a rank count --ranks predicts (" + o.ranks_text + "): otherwise it would go unused");
    ob::require(std::none_of(in.measured.begin(), in.measured.end(),
                             [&](const auto& other) { return other.sync == m.sync && other.ranks == m.ranks; }),
                "--comm", text,
                "one measurement a strategy and rank count (another --comm gives " + m.sync + "@" +
                    std::to_string(m.ranks) + ")");
    in.measured.push_back(m);
  }
  // Points across nodes need a strategy that runs there.
  const bool across = std::any_of(in.ranks.begin(), in.ranks.end(), [&](int n) { return n > o.per_node; });
  const bool any = std::any_of(in.calibration.strategies.begin(), in.calibration.strategies.end(), [&](const auto& s) {
    return (o.sync.empty() || s.sync == o.sync) && phase4::runs_across_nodes(s.sync);
  });
  ob::require(!across || any, o.sync.empty() ? "--calibration" : "--sync", o.sync.empty() ? o.calibration_path : o.sync,
              "a strategy that runs across nodes (one without peer access: nccl, sharded) where --ranks exceed "
              "--gpus-per-node");
  return in;
}

// One point's row: the best strategy's plan (or the given plan) on `n` ranks over `link`, and DDP's best cap.
std::vector<std::string> point_row(const Options& o, const Inputs& in, const Link& link, int n) {
  const phase4::Calibration& c = in.calibration;
  std::vector<phase4::PlanChoice> kept;
  std::vector<std::string> used;  // per kept choice: the measured strategy whose times it took
  for (const auto& s : c.strategies) {
    if (!o.sync.empty() && s.sync != o.sync) continue;
    if (n > o.per_node && !phase4::runs_across_nodes(s.sync)) continue;
    const phase4::Target target(phase4::comm_at(c, s, n, o.per_node, link, in.measured, &used.emplace_back()), n);
    if (o.fixed->count()) {  // the given plan, as the strategy runs it
      auto plan = phase4::plan_by_size(c.layout(), o.bucket_mb, o.first_bucket_mb);
      if (phase4::schedule_of(s.sync).whole_tensors) plan = phase4::align_plan_to_steps(plan, c.layout());
      kept.push_back({s.sync, plan, phase4::predict(c, s, plan, target)});
    } else {
      kept.push_back(phase4::choose_plans(c, {s.sync}, target).front());
    }
  }
  std::size_t best_index = 0;
  for (std::size_t k = 1; k < kept.size(); ++k) {
    if (kept[k].prediction.step_ms < kept[best_index].prediction.step_ms) best_index = k;
  }
  const phase4::PlanChoice* best = &kept[best_index];
  double ddp_ms = 0;
  const auto* ddp = phase4::ddp_like(c);
  const double cap = phase4::best_ddp_cap(
      c, ddp ? phase4::Target(phase4::comm_at(c, *ddp, n, o.per_node, link, in.measured), n) : phase4::Target(),
      &ddp_ms, o.ddp_min_cap_mb);
  auto mb = [](std::uint64_t elements) { return ob::format_number(elements * 4.0 / (1 << 20), 4); };
  return {link.name,
          std::to_string(n),
          std::to_string((n + o.per_node - 1) / o.per_node),
          best->sync,
          ob::format_number(best->prediction.step_ms, 6),
          std::to_string(best->plan.buckets.size()),
          mb(best->plan.buckets.front().size()),
          mb(best->plan.largest()),
          ob::format_number(best->prediction.slowdown, 4),
          best->prediction.extrapolated ? "1" : "0",
          ob::format_number(cap),
          ob::format_number(ddp_ms, 6),
          c.gpu,
          std::to_string(c.ranks),
          c.commit,
          c.model,
          c.compute_estimated ? "1" : "0",
          used[best_index]};
}

// Every backward step of the best plan on the calibrated ranks and link (no network): its gradient, its compute
// (measured, or estimated for a model), the bucket of that plan and of DDP's best cap it ends in.
ob::CsvTable layers_table(const phase4::Calibration& c, const std::vector<std::string>& names, const Options& o) {
  const auto best = phase4::choose_plans(c, o.sync.empty() ? std::vector<std::string>{} : std::vector{o.sync}).front();
  double ddp_ms = 0;
  const double cap = phase4::best_ddp_cap(c, {}, &ddp_ms, o.ddp_min_cap_mb);
  const phase4::GradientLayout layout = c.layout();
  const auto ddp = phase4::plan_like_ddp(layout, std::isnan(cap) ? 25.0 : cap);
  auto bucket_of = [](const phase4::BucketPlan& plan, std::uint64_t end) {  // the bucket holding element end - 1
    std::size_t b = 0;
    while (plan.buckets[b].end < end) ++b;
    return std::to_string(b);
  };
  ob::CsvTable table(ob::csv_schema_columns("predict_layers", "columns"));
  for (int s = 0; s < layout.steps(); ++s) {
    const auto mib = [](std::uint64_t elements) { return ob::format_number(elements * 4.0 / (1 << 20), 6); };
    table.add_row({std::to_string(s), names[static_cast<std::size_t>(s)], mib(layout.ends[s] - layout.begin(s)),
                   mib(layout.ends[s]), ob::format_number(c.step_ms[static_cast<std::size_t>(s)], 6),
                   c.compute_estimated ? "1" : "0", best.sync, bucket_of(best.plan, layout.ends[s]),
                   std::to_string(best.plan.buckets.size()), ob::format_number(cap), bucket_of(ddp, layout.ends[s])});
  }
  return table;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string program = "phase4_predict";
  return ob::guarded_main(program, [&]() -> int {
    CLI::App app("The planner's what-if: predicted step and best bucket plan on N ranks, from a calibration", program);
    Options options;
    add_options(app, options);
    app.set_version_flag("--version", ob::version_text(program), "Print the version, commit and build, then exit");
    if (auto code = ob::parse_options(app, argc, argv, true)) return *code;
    const Inputs in = read_inputs(options);
    if (const auto doubt = in.calibration.negative_slowdown(); !doubt.empty()) {
      std::cerr << program << ": warning: " << options.calibration_path << ": " << doubt << std::endl;
    }
    ob::CsvTable table(ob::csv_schema_columns("predict", "columns"));  // declared once, in schema.json
    for (const auto& link : in.links) {
      for (int n : in.ranks) table.add_row(point_row(options, in, link, n));
    }
    if (!options.layers_csv.empty()) {
      const auto layers = layers_table(in.calibration, in.step_names, options);
      ob::write_file_atomic(options.layers_csv, layers.to_string());
      std::cerr << program << ": wrote " << options.layers_csv << " (" << layers.rows().size() << " steps)"
                << std::endl;
    }
    if (options.csv.empty()) {
      std::cout << table.to_string();
    } else {
      ob::write_file_atomic(options.csv, table.to_string());
      std::cerr << program << ": wrote " << options.csv << " (" << table.rows().size() << " points)" << std::endl;
    }
    return ob::kExitOk;
  });
}
