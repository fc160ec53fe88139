// Phase 1's summary rows (one per variant and kernel, plus the whole iteration) and its console table.
#pragma once

#include <string>
#include <vector>

#include "common/summary.hpp"
#include "phase1_cuda_baseline/config.hpp"
#include "phase1_cuda_baseline/trainer.hpp"

namespace phase1 {

// Whether a run's loss (every step's, warm-up included) ended above where it started or not finite.
bool diverged(const std::vector<double>& loss);

std::vector<ob::SummaryRow> summary_rows(const Config& config, const std::vector<VariantResult>& results);
std::string console_table(const std::vector<ob::SummaryRow>& rows);

// The failure message of the first variant whose check failed, or "" when all passed (or none was checked).
std::string first_check_failure(const std::vector<VariantResult>& results, const Trainer& trainer);

}  // namespace phase1
