// A mode's runs joined across passes (--passes): every per-iteration vector continued, nothing averaged.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "common/stats.hpp"
#include "phase4_chunked_nccl/schedule/trainer.hpp"

namespace phase4 {

namespace {
void extend(std::vector<double>& into, const std::vector<double>& more) {
  into.insert(into.end(), more.begin(), more.end());
}

// Per part ([part][iteration]): each part's iterations continued (a side without the parts takes the other's shape).
void extend(std::vector<std::vector<double>>& into, const std::vector<std::vector<double>>& more) {
  if (into.empty()) into.assign(more.size(), {});
  for (std::size_t k = 0; k < more.size() && k < into.size(); ++k) extend(into[k], more[k]);
}
}  // namespace

void append_run(ModeRun& into, ModeRun&& more) {
  int before = 0;  // the events' steps numbered on after into's
  for (const auto& event : into.events) before = std::max(before, event.iter + 1);
  extend(into.iter_ms, more.iter_ms);
  extend(into.marked_ms, more.marked_ms);
  extend(into.forward_ms, more.forward_ms);
  extend(into.update_ms, more.update_ms);
  extend(into.backward_total_ms, more.backward_total_ms);
  extend(into.enqueue_ms, more.enqueue_ms);
  extend(into.enqueue_span_ms, more.enqueue_span_ms);
  for (auto part : {&ModeRun::step_ms, &ModeRun::bucket_ms, &ModeRun::layer_ms}) extend(into.*part, more.*part);
  for (const auto& [name, samples] : more.part_ms) extend(into.part_ms[name], samples);
  for (auto& event : more.events) {
    event.iter += before;
    into.events.push_back(std::move(event));
  }
  into.ranks_agree = into.ranks_agree && more.ranks_agree;
  if (into.first_wrong.empty()) into.first_wrong = std::move(more.first_wrong);
  into.wrong = std::max(into.wrong, more.wrong);
  into.energy_j += more.energy_j;  // NaN (no figure) on either side: none
  into.timed_s += more.timed_s;
}

ModeRun at_timed_pace(ModeRun run) {
  if (run.marked_ms.empty()) return run;
  const double scale = ob::summarize(run.iter_ms).p50 / ob::summarize(run.marked_ms).p50;
  auto times = [scale](std::vector<double>& samples) {
    for (double& ms : samples) ms *= scale;
  };
  for (auto part : {&ModeRun::forward_ms, &ModeRun::update_ms, &ModeRun::backward_total_ms}) times(run.*part);
  for (auto part : {&ModeRun::step_ms, &ModeRun::bucket_ms, &ModeRun::layer_ms}) {
    for (auto& samples : run.*part) times(samples);
  }
  for (auto& [name, per_layer] : run.part_ms) {
    for (auto& samples : per_layer) times(samples);
  }
  return run;
}

std::string pass_label(int pass, int passes) {
  return passes > 1 ? " (pass " + std::to_string(pass + 1) + " of " + std::to_string(passes) + ")" : "";
}

std::vector<ModeRun> run_passes(Trainer& trainer, const BucketPlan& plan, const std::vector<ob::Mode>& modes,
                                int passes, bool check, ob::SteadyClock::time_point origin,
                                const std::function<void(ob::Mode, int)>& announce) {
  const int iters = trainer.iters();
  const double min_time_ms = trainer.min_time_ms();
  std::vector<ModeRun> runs(modes.size());
  for (int pass = 0; pass < passes; ++pass) {
    trainer.set_timing(iters / passes + (pass < iters % passes ? 1 : 0), min_time_ms / passes);
    for (std::size_t m = 0; m < modes.size(); ++m) {
      if (announce) announce(modes[m], pass);
      trainer.reset_weights();
      ModeRun run = trainer.run(modes[m], plan, check, origin);
      if (pass == 0) {
        runs[m] = std::move(run);
      } else {
        append_run(runs[m], std::move(run));
      }
    }
  }
  trainer.set_timing(iters, min_time_ms);
  return runs;
}

}  // namespace phase4
