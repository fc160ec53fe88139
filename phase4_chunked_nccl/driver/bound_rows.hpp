// What phase 4's bound rows are: a schedule's lower bound from its isolated parts, or, for a strategy whose
// schedule cannot be bounded that way (SyncRow::bounded), a model; and the checks that a lower bound stays below
// the step it bounds and that the overlapped step is no faster than its compute-only step.
#pragma once

#include <ostream>
#include <vector>

#include "common/summary.hpp"

namespace phase4 {

// Names what the bound rows are (bound_kind): lower bounds, or models for strategies whose schedule cannot be bounded
// from isolated parts. A lower bound above the overlapped step beyond that step's spread breaks its definition: said
// on the progress stream, so the row is questioned before it is published; so is an overlapped step faster than
// its compute-only step beyond both spreads (the compute-only step is the same work less the collectives).
void label_bounds(std::vector<ob::SummaryRow>& rows, bool bounded, std::ostream* progress);

}  // namespace phase4
