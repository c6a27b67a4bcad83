#include "dist/launch.h"

#include <cstdio>
#include <fstream>
#include <iterator>

#include "core/backend.h"
#include "dist/process.h"

namespace minidl {
namespace dist {

namespace {

std::string join(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

// Every rank's arguments must be rank 0's.
void check_same_flags(const std::vector<std::string>& args) {
  const std::vector<std::string> all = all_gather_strings(join(args));
  std::string differing;
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0]) differing += str_cat("; rank ", r, ": `", all[r], "`");
  if (!differing.empty())
    throw JobError(str_cat("the processes were started with different flags (every rank must get the same "
                           "command line): rank 0: `", all[0], "`", differing));
}

// "" when this rank can use `d`, else why not (with the host and local rank, to find the machine).
std::string device_problem(const Device& d, const ProcessInfo& p) {
  const std::string where = str_cat("host ", p.host, ", local rank ", p.local_rank, ": ");
  if (d.is_cuda() && has_backend(DeviceType::cuda)) {
    const int gpus = backend_for(DeviceType::cuda).device_count();
    if (gpus > 0 && d.index >= gpus)
      return str_cat(where, "needs ", d.str(), " but the host has ", gpus, " usable GPU(s); --device cuda takes one "
                     "GPU per process: start at most ", gpus, " process(es) on this host");
  }
  try {
    check_device_usable(d);
    return "";
  } catch (const std::exception& e) {
    return where + e.what();
  }
}

Device pick_device(const std::string& flag, const ProcessInfo& p) {
  if (flag == "auto") {
    // CUDA when every rank has a GPU of its own, else the CPU for everyone.
    const Device gpu = Device::cuda(p.local_rank);
    const bool usable = device_problem(gpu, p).empty();
    for (const std::string& answer : all_gather_strings(usable ? "1" : "0"))
      if (answer != "1") return Device::cpu();
    return gpu;
  }
  Device d = Device::parse(flag);
  if (d.is_cuda()) {
    if (flag != "cuda" && flag != "gpu" && p.world_size > 1)
      throw JobError(str_cat("--device ", flag, " with ", p.world_size, " processes: use --device cuda (each process "
                             "takes the GPU of its local rank; CUDA_VISIBLE_DEVICES chooses which GPUs)"));
    if (flag == "cuda" || flag == "gpu") d = Device::cuda(p.local_rank);
  }
  agree_or_throw(device_problem(d, p), str_cat("--device ", flag));
  return d;
}

}  // namespace

std::vector<std::string> command_line_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  size_t start = 0;
  while (start < all.size()) {  // NUL-separated; the first one is the program
    const size_t end = all.find('\0', start);
    args.push_back(all.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (!args.empty()) args.erase(args.begin());
  return args;
}

DistributedRun start_distributed(const std::string& program, const std::string& device_flag, int64_t global_batch) {
  const ProcessInfo& p = process_info();
  check_same_flags(command_line_arguments());
  if (global_batch % p.world_size != 0)
    throw JobError(str_cat("--batch ", global_batch, " (the global batch) cannot be split evenly over ", p.world_size,
                           " processes; use a multiple of ", p.world_size, " or another number of processes"));
  DistributedRun run;
  run.rank = p.rank;
  run.world_size = p.world_size;
  run.device = pick_device(device_flag, p);
  run.communicator = make_communicator(backend_for(run.device), run.device);
  if (p.rank != 0) {
    std::fflush(stdout);
    if (!std::freopen("/dev/null", "w", stdout))
      throw Error(str_cat("cannot send stdout to /dev/null on rank ", p.rank));
  }
  std::printf("%s: distributed: %d process%s, %s backend on %s%s; global batch %lld = %d x %lld\n", program.c_str(),
              p.world_size, p.world_size == 1 ? "" : "es", backend_name(run.communicator->backend()),
              run.device.is_cuda() ? "one GPU each" : "the CPU",
              run.device.is_cuda() ? str_cat(" (rank 0: ", run.device.str(), ")").c_str() : "",
              static_cast<long long>(global_batch), p.world_size, static_cast<long long>(global_batch / p.world_size));
  std::printf("%s: %s\n", program.c_str(), run.communicator->describe().c_str());
  std::fflush(stdout);
  return run;
}

}  // namespace dist
}  // namespace minidl
