// dist/process.h — this process's place in a job, and the few CPU-side collectives that set a job up.
//
// With MPI (a build with MINIDL_WITH_MPI), process_info() initialises MPI on first use
// (MPI_Init_thread, MPI_THREAD_FUNNELED: only the main thread calls MPI) and reads the rank and world size
// of MPI_COMM_WORLD; the local rank (which GPU to take) is the rank among the processes of the same host
// (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED). MPI_Finalize runs at exit. A program run without mpirun
// is a job of one. Without MPI, every process is a job of one; started by a launcher with more
// processes (OMPI_COMM_WORLD_SIZE, PMI_SIZE > 1) it refuses, saying the build lacks MPI.
//
// The collectives here move small CPU values (flags, NCCL's unique id, error messages) and are called by
// every rank in the same order; tensors travel through a Communicator (dist/communicator.h).
#pragma once
#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"

namespace minidl {
namespace dist {

struct ProcessInfo {
  int rank = 0, world_size = 1;
  int local_rank = 0, local_size = 1;  // among the processes of this host
  std::string host;
  bool mpi = false;                    // MPI is initialised (the job may still be of one process)
};

// Initialises the process layer on the first call (see the header comment).
const ProcessInfo& process_info();
// Whether this build can start jobs of more than one process (it has MPI).
bool multi_process_supported();

// Every rank's `mine`, indexed by rank.
std::vector<std::string> all_gather_strings(const std::string& mine);
// Copies root's n bytes at `data` to every rank's `data`.
void broadcast_bytes(void* data, size_t n, int root);
// The largest of every rank's `mine` (one MPI_Allreduce of an int on the host: cheap enough to call every
// training step, e.g. to agree on stopping when one rank got SIGINT: examples/run_state.h).
int max_over_ranks(int mine);

// ---- how long a rank waits for the others: MINIDL_DIST_TIMEOUT
//
// A collective (here, or a Communicator's) that has not completed MINIDL_DIST_TIMEOUT seconds after this
// rank entered it ends the whole job: a rank that is stopped (SIGSTOP, a debugger), hung, or busy far
// longer than any healthy step, evaluation or save would otherwise leave every other rank blocked
// forever. The mpi backend and these helpers find which ranks are silent and say so in one line on
// stderr, e.g.
//   minidl dist: rank 0 of 2 (host h) waited 600 s (MINIDL_DIST_TIMEOUT) in collective #1234
//   (all_reduce_async); silent rank(s), no answer within 10 s: 1 (host h). Stopping the job (exit status 5).
// then end the job with MPI_Abort and kExitCollectiveTimeout (mpirun exits with it). Not the nccl backend's
// collectives, which wait on the GPU (docs/distributed.md, "When a rank stops answering").
constexpr int kExitCollectiveTimeout = 5;

// MINIDL_DIST_TIMEOUT in seconds (600 when unset, far beyond any healthy wait; 0: wait forever), read on
// the first call through the settings table (core/settings.h), which refuses a malformed value.
double collective_timeout();

// An error every rank raises together: one or more ranks found a problem and all of them stop, so no
// rank is left waiting in a collective. Programs print it once (rank 0) and every rank exits normally
// with `exit_status` (1; 3 when training diverged: examples/train_guard.h).
class JobError : public Error {
 public:
  explicit JobError(const std::string& what, int exit_status = 1) : Error(what), exit_status_(exit_status) {}
  int exit_status() const { return exit_status_; }

 private:
  int exit_status_;
};

// Every rank passes "" or the reason it cannot go on; when any rank has a reason, every rank throws a
// JobError: "<what>: rank 1 (host h): <reason>; rank 3 (host h): <reason>" (one rank: "<what>: <reason>"
// in a job of one). Collective.
void agree_or_throw(const std::string& my_problem, const std::string& what);

// Runs `work` on rank 0 alone (its effects must happen once: checking and cleaning the folder a file will
// be saved to, say) and shares the outcome: when it throws, every rank throws a JobError with its
// message. Collective.
void run_on_root(const std::function<void()>& work);

// For a program's top-level catch: prints "<program>: <message>" to stderr (a JobError on rank 0 only;
// other errors on every rank, with the rank) and returns the exit status: a JobError's own, else
// `status`. An error that was not a JobError in a job of several processes ends the whole job
// (MPI_Abort with `status`): the other ranks may be waiting for this one in a collective and would
// otherwise wait forever.
int report_error(const std::exception& e, const std::string& program, int status = 1);

}  // namespace dist
}  // namespace minidl
