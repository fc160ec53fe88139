// Phase 4's options that take one of a few names, typed once: CLI11 parses the name into the enum
// (ob::add_enum_option), code compares values, and the name appears only in the CSV, the labels and the messages.
#pragma once

#include "common/modes.hpp"
#include "common/options.hpp"

namespace phase4 {

// The interference map's rows: phase 4's own mode (common/modes.hpp).
inline const ob::Mode kInterferenceMode = ob::register_mode("interference", ob::ModeKind::kOther);

enum class RunMode { kAll, kSeq, kOverlap, kCompute, kComm, kInterference };  // --mode
enum class PlanMode { kCaps, kAuto };  // --plan
enum class WireType { kFp32, kBf16 };  // --comm-dtype
enum class StreamPriority { kNormal, kHigh };  // --comm-priority
enum class CtaPolicy { kDefault, kEfficiency, kZero };  // --nccl-cta-policy
enum class Transport { kNvlink, kShm, kSocket };  // --transport

inline const ob::Names<RunMode>& run_mode_names() {
  static const ob::Names<RunMode> names = {{"seq", RunMode::kSeq},         {"overlap", RunMode::kOverlap},
                                           {"compute", RunMode::kCompute}, {"comm", RunMode::kComm},
                                           {"all", RunMode::kAll},         {"interference", RunMode::kInterference}};
  return names;
}
inline const ob::Names<PlanMode>& plan_names() {
  static const ob::Names<PlanMode> names = {{"caps", PlanMode::kCaps}, {"auto", PlanMode::kAuto}};
  return names;
}
inline const ob::Names<WireType>& wire_names() {
  static const ob::Names<WireType> names = {{"fp32", WireType::kFp32}, {"bf16", WireType::kBf16}};
  return names;
}
inline const ob::Names<StreamPriority>& priority_names() {
  static const ob::Names<StreamPriority> names = {{"normal", StreamPriority::kNormal}, {"high", StreamPriority::kHigh}};
  return names;
}
inline const ob::Names<CtaPolicy>& cta_policy_names() {
  static const ob::Names<CtaPolicy> names = {
      {"default", CtaPolicy::kDefault}, {"efficiency", CtaPolicy::kEfficiency}, {"zero", CtaPolicy::kZero}};
  return names;
}

inline const ob::Names<Transport>& transport_names() {
  static const ob::Names<Transport> names = {
      {"nvlink", Transport::kNvlink}, {"shm", Transport::kShm}, {"socket", Transport::kSocket}};
  return names;
}

inline const std::string& name(RunMode v) { return ob::name_of(run_mode_names(), v); }
inline const std::string& name(PlanMode v) { return ob::name_of(plan_names(), v); }
inline const std::string& name(WireType v) { return ob::name_of(wire_names(), v); }
inline const std::string& name(StreamPriority v) { return ob::name_of(priority_names(), v); }
inline const std::string& name(CtaPolicy v) { return ob::name_of(cta_policy_names(), v); }
inline const std::string& name(Transport v) { return ob::name_of(transport_names(), v); }

}  // namespace phase4
