// The --sync table: a strategy's name (config.cpp's sync_options()) to its factory (one file per strategy).
#include <stdexcept>

#include "phase4_chunked_nccl/gradient_sync.hpp"

namespace phase4 {

std::unique_ptr<GradientSync> make_sync(const std::string& name, const SyncContext& context) {
  if (name == "nccl") return make_nccl_allreduce(context);
  if (name == "nccl-sym") return make_nccl_symmetric(context);
  if (name == "ce") return make_copy_engine(context);
  if (name == "sharded") return make_sharded(context, false);
  if (name == "sharded-ce") return make_sharded(context, true);
  throw std::invalid_argument("--sync: no strategy '" + name + "' in this build");
}

}  // namespace phase4
