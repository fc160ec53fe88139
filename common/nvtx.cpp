#include "common/nvtx.hpp"

#ifdef OVERLAP_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

namespace ob {

#ifdef OVERLAP_HAVE_NVTX
NvtxRange::NvtxRange(const char* name) { nvtxRangePushA(name); }
NvtxRange::~NvtxRange() { nvtxRangePop(); }
void nvtx_name_thread(const std::string& name) {
#ifdef __linux__
  nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), name.c_str());
#else
  (void)name;
#endif
}
#else
NvtxRange::NvtxRange(const char*) {}
NvtxRange::~NvtxRange() {}
void nvtx_name_thread(const std::string&) {}
#endif

}  // namespace ob
