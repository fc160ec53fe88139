// The single-process reference: `steps` full-batch gradient-descent steps on the concatenated global batch, in
// double. Data parallelism must not change the math: every strategy's weights after the same steps equal these
// within 1e-5 relative.
#pragma once

#include <vector>

#include "phase3_mpi_cuda/config.hpp"

namespace phase3 {

std::vector<double> reference_weights(const Config& config, int steps);

}  // namespace phase3
