// The options --sweep can vary, each declared once (name, bounds, help, how a point takes its value): add_options()
// adds the whole-number ones from here, and --sweep NAME=V1,V2,... checks its values against the same bounds. The
// schedules' knobs (core/knobs.hpp) are among them, after the table's own whole-number options, as their rows
// declare them.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "phase4_chunked_nccl/driver/config.hpp"

namespace phase4 {

struct SweepParameter {
  std::string name;  // the option's name without "--"
  enum Kind { kWhole, kNumber, kStrategy, kPlan, kShape } kind;
  double least, most;  // kWhole: the option's range; kNumber and kPlan's caps: (least, most]
  std::string help;  // kWhole: the option's help ("" when add_options describes it itself)
  int Config::*member = nullptr;  // kWhole: the field it sets (null: the knob of its name, Config::knobs)
  void (*apply)(Config&, const std::string&) = nullptr;  // the others: how a point takes its value
  bool show_default = true;
};

const std::vector<SweepParameter>& sweep_parameters();

// --NAME for the whole-number option NAME of sweep_parameters(), with its declared range and help.
void add_whole_option(CLI::App& app, Config& config, const std::string& name);

struct Sweep {
  const SweepParameter* parameter = nullptr;
  std::vector<std::string> values;
};
Sweep parse_sweep(const std::string& text);  // throws ob::UsageError naming --sweep

// A shape sweep's value "HxLxB" as hidden, layers and batch, each in its option's range (nullopt otherwise).
struct Shape {
  int hidden, layers, batch;
};
std::optional<Shape> parse_shape(const std::string& text);

}  // namespace phase4
