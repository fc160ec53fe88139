#include "phase4_chunked_nccl/core/spec.hpp"

namespace phase4 {

double ModelSpec::grad_mb() const { return 4.0 * static_cast<double>(layout().elements()) / (1 << 20); }

}  // namespace phase4
