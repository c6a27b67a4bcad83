// dist/mpi_wait.h — inside minidl::dist's MPI files: every collective waits with a deadline.
//
// MPI's blocking collectives (MPI_Allreduce, MPI_Barrier, ...) wait forever for a rank that never comes.
// So every collective of mpi_runtime.cpp and mpi_backend.cpp is started non-blocking (MPI_Iallreduce,
// MPI_Ibarrier, ...) and waited for here: MPI_Testall in a loop, which yields the core between tests for
// the first 100 ms of a wait, then sleeps 200 µs between tests. Open MPI moves a collective's data only
// inside MPI calls, so the tests must come often while data flows (a sleep that grows with the wait
// slows down the transfer that follows a late partner): the waits of a healthy step, shorter than 100 ms,
// go at MPI_Wait's pace, and a long wait (a rank saving or evaluating) leaves the core mostly idle where
// MPI's blocking calls spin (docs/distributed.md, "When a rank stops answering").
// Past MINIDL_DIST_TIMEOUT (dist/process.h) the job ends, naming the silent ranks:
//
//   Every rank numbers the collectives it enters (#1, #2, ...: the same numbers on every rank, which call
//   them in the same order). While a rank waits in any collective it also answers the question "are you
//   alive?" from any other rank with the number of the collective it is in (point-to-point messages on a
//   communicator of their own, which need no third rank). A rank that times out asks every other rank
//   and waits min(timeout, 10 s) for the answers: a rank that did not answer is silent (stopped, hung, or
//   busy outside MPI far longer than a step); one that answered from another collective is named too.
//   It prints one line on stderr and ends the job with MPI_Abort(kExitCollectiveTimeout): mpirun then
//   kills every process of the job, a stopped one included.
//
// Not covered: the set-up before the numbering starts (MPI_Init, MPI_Comm_split_type, MPI_Comm_dup of the
// process layer), which every rank runs before any work of its own, and MPI_Finalize at exit: they block
// as MPI does.
#pragma once
#include <chrono>
#include <cstdint>
#include <vector>

#include "dist/mpi_check.h"

namespace minidl {
namespace dist {

// One collective this rank has entered.
struct CollectiveCall {
  int64_t number = 0;  // #1, #2, ... in the order this rank entered them
  const char* op = "";
  std::chrono::steady_clock::time_point entered;
};

// Counts a collective this rank enters now, named `op` in messages (e.g. "all_reduce").
CollectiveCall enter_collective(const char* op);

// Whether `requests` have all completed (then they are cleared). Lets MPI make progress and answers the
// other ranks' questions; never waits.
bool test_collective(const CollectiveCall& call, std::vector<MPI_Request>& requests);

// Waits until `requests` have all completed (then they are cleared). Past the timeout, counted from when
// `call` was entered, it ends the job and does not return.
void wait_collective(const CollectiveCall& call, std::vector<MPI_Request>& requests);

// enter_collective, one request started by `start` (an MPI_I* call returning its code), wait_collective.
template <class Start>
void run_collective(const char* op, Start start) {
  const CollectiveCall call = enter_collective(op);
  std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
  const int rc = start(&requests[0]);
  MINIDL_CHECK(rc == MPI_SUCCESS, "MPI: starting ", op, " failed: ", mpi_error_text(rc));
  wait_collective(call, requests);
}

}  // namespace dist
}  // namespace minidl
