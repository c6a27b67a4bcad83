// dist/launch.h — what a training program does when started with --distributed (mnist train, captcha
// train): join the job, pick this rank's device, check the job is sound, connect the communicator.
//
//   mpirun -np 4 build/bin/mnist train --distributed --device cuda --batch 256
//
// start_distributed():
//   1. joins the job (dist/process.h): rank, world size, local rank;
//   2. checks that every rank was started with the same flags (the arguments after the program name, read
//      from /proc/self/cmdline);
//   3. checks that the world size divides the global batch (--batch stays the whole batch: each rank
//      takes batch / world of it);
//   4. picks the device: --device cpu -> the CPU and the mpi backend; --device cuda -> cuda:<local rank>
//      and the nccl backend (cuda:N is refused with several processes: CUDA_VISIBLE_DEVICES chooses
//      GPUs); --device auto -> cuda when every rank has a GPU for its local rank, else the CPU;
//   5. creates the communicator.
// A check that fails fails on every rank together (dist::JobError, printed once by rank 0) before any
// rank waits for another in a collective. On ranks other than 0, stdout goes to /dev/null: only rank 0
// prints progress and results (errors still reach stderr from every rank).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.h"

namespace minidl {
namespace dist {

struct DistributedRun {
  std::unique_ptr<Communicator> communicator;
  Device device;
  int rank = 0, world_size = 1;
  bool is_root() const { return rank == 0; }
  // This rank's samples of a global batch of `global_batch`.
  int64_t local_batch(int64_t global_batch) const { return global_batch / world_size; }
};

DistributedRun start_distributed(const std::string& program, const std::string& device_flag, int64_t global_batch);

// This process's arguments after the program name (Linux: /proc/self/cmdline; empty where unreadable).
std::vector<std::string> command_line_arguments();

}  // namespace dist
}  // namespace minidl
