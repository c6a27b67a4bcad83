// dist/nccl_library.h — NCCL, loaded at run time with dlopen (builds with MINIDL_WITH_NCCL).
//
// Why not link libnccl: NCCL comes in different places on different machines (with the CUDA toolkit here,
// only inside Python's nvidia-nccl-cu13 wheel elsewhere). A binary linked with it would not even start
// where the loader cannot find it, though most runs never use NCCL. Loaded on first use instead, the
// binary starts everywhere, and `minidl info` and --distributed can say "not found" with the reason.
// Only the header is needed at build time (nccl.h from the CUDA toolkit): the function pointer types
// come from its declarations, so a signature mismatch is a compile error, not a crash.
//
// Where it is looked for: $MINIDL_NCCL_LIBRARY (a path) when set, otherwise "libnccl.so.2" through the
// dynamic loader's usual search (LD_LIBRARY_PATH, the ld.so cache, the binary's run path).
#pragma once
#include <nccl.h>

#include <string>

namespace minidl {
namespace dist {

struct NcclLibrary {
  std::string path;  // what was opened
  int version = 0;   // ncclGetVersion: 22809 = 2.28.9
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRank) CommInitRank = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclAllReduce) AllReduce = nullptr;
  decltype(&::ncclBroadcast) Broadcast = nullptr;
};

// The loaded library (loaded once, then kept). Throws an Error saying where it looked and why it failed.
const NcclLibrary& nccl_library();

// "2.28.9" from ncclGetVersion's number.
std::string nccl_version_string(int version);

}  // namespace dist
}  // namespace minidl

// Checks an NCCL call made through nccl_library(); a failure throws naming the call, NCCL's message, the
// file and the line.
#define MINIDL_NCCL_CHECK(call)                                                                                  \
  do {                                                                                                           \
    const ncclResult_t rc_ = (call);                                                                             \
    MINIDL_CHECK(rc_ == ncclSuccess, "NCCL: ", #call, " failed: ", ::minidl::dist::nccl_library().GetErrorString(rc_), \
                 " (", __FILE__, ":", __LINE__, ")");                                                            \
  } while (0)
