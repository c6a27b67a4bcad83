// dist/mpi_runtime.cpp — the process layer over MPI (builds with MINIDL_WITH_MPI; dist/process.h), and the
// waits with a deadline of every collective of dist/'s MPI files (dist/mpi_wait.h).
//
// MPI is initialised on the first process_info() call, not at program start: a program that never asks
// for a distributed run never touches MPI. MPI_THREAD_FUNNELED is enough: only the main thread calls MPI
// (the data loader's and OpenMP's threads never do). MPI_Finalize is registered with atexit.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "dist/backends.h"
#include "dist/mpi_wait.h"
#include "dist/process.h"

namespace minidl {
namespace dist {

namespace {

using Clock = std::chrono::steady_clock;

ProcessInfo info;
bool started = false;
std::once_flag once;
std::vector<std::string> hosts;  // of every rank, for messages (empty until gathered)

// ---- the collectives' numbers and the "are you alive?" service (dist/mpi_wait.h)
int64_t entered = 0;                  // collectives this rank has entered
MPI_Comm alive_comm = MPI_COMM_NULL;  // questions and answers only: they never mix with collectives
constexpr int kQuestionTag = 1, kAnswerTag = 2;
MPI_Request question = MPI_REQUEST_NULL;  // listening for the next question, from any rank
int64_t question_payload = 0;             // the asker's collective number (not used)
struct Answer {
  int64_t number = 0;  // stays put until the send completes
  MPI_Request request = MPI_REQUEST_NULL;
};
std::vector<Answer> answers;  // per rank: the last answer sent to it

void listen_for_question() {
  MPI_Irecv(&question_payload, 1, MPI_INT64_T, MPI_ANY_SOURCE, kQuestionTag, alive_comm, &question);
}

// Answers every question received so far with `number`, the collective this rank is in.
void answer_questions(int64_t number) {
  while (question != MPI_REQUEST_NULL) {
    int asked = 0;
    MPI_Status status;
    if (MPI_Test(&question, &asked, &status) != MPI_SUCCESS || !asked) return;
    Answer& a = answers[status.MPI_SOURCE];
    int free_to_send = 1;  // a rank asks once; an answer still on its way to it is answer enough
    if (a.request != MPI_REQUEST_NULL) MPI_Test(&a.request, &free_to_send, MPI_STATUS_IGNORE);
    if (free_to_send) {
      a.number = number;
      MPI_Isend(&a.number, 1, MPI_INT64_T, status.MPI_SOURCE, kAnswerTag, alive_comm, &a.request);
    }
    listen_for_question();
  }
}

std::string host_of(int rank) {
  return rank < static_cast<int>(hosts.size()) ? str_cat(" (host ", hosts[rank], ")") : "";
}

// Past the timeout in collective `call`: asks every other rank whether it is alive, names those that do not
// answer, and ends the job.
[[noreturn]] void stop_job_after_timeout(const CollectiveCall& call, double timeout) {
  const int world = info.world_size, me = info.rank;
  const double grace = std::min(timeout, 10.0);
  std::vector<int64_t> replies(world, 0);
  std::vector<MPI_Request> receives(world, MPI_REQUEST_NULL), questions(world, MPI_REQUEST_NULL);
  std::vector<bool> answered(world, false);
  answered[me] = true;
  const int64_t asking = call.number;
  for (int r = 0; r < world; ++r) {
    if (r == me) continue;
    MPI_Irecv(&replies[r], 1, MPI_INT64_T, r, kAnswerTag, alive_comm, &receives[r]);
    MPI_Isend(&asking, 1, MPI_INT64_T, r, kQuestionTag, alive_comm, &questions[r]);
  }
  int missing = world - 1;
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                        std::chrono::duration<double>(grace));
  while (missing > 0 && Clock::now() < deadline) {
    for (int r = 0; r < world; ++r) {
      int got = 0;
      if (answered[r] || MPI_Test(&receives[r], &got, MPI_STATUS_IGNORE) != MPI_SUCCESS || !got) continue;
      answered[r] = true;
      --missing;
    }
    answer_questions(call.number);  // the others may be asking too
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  std::string silent, elsewhere;
  for (int r = 0; r < world; ++r) {
    if (!answered[r]) silent += str_cat(silent.empty() ? "" : ", ", r, host_of(r));
    else if (r != me && replies[r] != call.number)
      elsewhere += str_cat(elsewhere.empty() ? "" : ", ", "rank ", r, " answered from collective #", replies[r]);
  }
  std::string verdict;
  if (!silent.empty()) {
    verdict = str_cat("silent rank(s), no answer within ", grace, " s: ", silent, elsewhere.empty() ? "" : "; ",
                      elsewhere);
  } else {
    std::string all;
    for (int r = 0; r < world; ++r)
      if (r != me) all += str_cat(all.empty() ? "" : ", ", "rank ", r, " answered from collective #", replies[r]);
    verdict = str_cat("no rank is silent: ", all, ": the ranks wait in collectives that do not match (does the "
                      "program call them in a different order on different ranks?)");
  }
  std::fflush(stdout);
  std::fprintf(stderr, "minidl dist: rank %d of %d%s waited %s s (MINIDL_DIST_TIMEOUT) in collective #%lld (%s); %s. "
               "Stopping the job (exit status %d).\n", me, world, host_of(me).c_str(), str_cat(timeout).c_str(),
               static_cast<long long>(call.number), call.op, verdict.c_str(), kExitCollectiveTimeout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kExitCollectiveTimeout);
  std::_Exit(kExitCollectiveTimeout);
}

// Between two tests of a wait that has lasted `waited` (why these numbers: dist/mpi_wait.h).
void pause_while_waiting(Clock::duration waited) {
  if (waited < std::chrono::milliseconds(100))
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (question != MPI_REQUEST_NULL) {  // no rank asks any more: stop listening
    MPI_Cancel(&question);
    MPI_Wait(&question, MPI_STATUS_IGNORE);
  }
  for (Answer& a : answers)
    if (a.request != MPI_REQUEST_NULL) MPI_Request_free(&a.request);  // small: already on its way
  if (alive_comm != MPI_COMM_NULL) MPI_Comm_free(&alive_comm);
  MPI_Finalize();
}

// Every rank's `mine` over MPI_COMM_WORLD, indexed by rank.
std::vector<std::string> gather_strings(const std::string& mine) {
  const int world = info.world_size;
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(world);
  run_collective("all_gather_strings", [&](MPI_Request* r) {
    return MPI_Iallgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD, r);
  });
  std::vector<int> offsets(world, 0);
  for (int r = 1; r < world; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::string joined(static_cast<size_t>(offsets.back() + lengths.back()), '\0');
  run_collective("all_gather_strings", [&](MPI_Request* r) {
    return MPI_Iallgatherv(mine.data(), length, MPI_CHAR, joined.data(), lengths.data(), offsets.data(), MPI_CHAR,
                           MPI_COMM_WORLD, r);
  });
  std::vector<std::string> out(world);
  for (int r = 0; r < world; ++r) out[r] = joined.substr(offsets[r], lengths[r]);
  return out;
}

void start() {
  collective_timeout();  // a bad MINIDL_DIST_TIMEOUT is refused before any rank waits for another
  int initialized = 0;
  MINIDL_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    MINIDL_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
    std::atexit(finalize_at_exit);
    MINIDL_CHECK(provided >= MPI_THREAD_FUNNELED, "MPI: the library provides thread level ", provided,
                 ", minidl needs MPI_THREAD_FUNNELED (its data loader runs a thread next to the MPI calls)");
  }
  // Errors come back as return codes (checked above) instead of aborting inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MINIDL_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &info.rank));
  MINIDL_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &info.world_size));
  MPI_Comm local;
  MINIDL_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local));
  MINIDL_MPI_CHECK(MPI_Comm_rank(local, &info.local_rank));
  MINIDL_MPI_CHECK(MPI_Comm_size(local, &info.local_size));
  MPI_Comm_free(&local);
  char host[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  MINIDL_MPI_CHECK(MPI_Get_processor_name(host, &length));
  info.host.assign(host, length);
  info.mpi = true;
  MINIDL_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &alive_comm));
  MPI_Comm_set_errhandler(alive_comm, MPI_ERRORS_RETURN);
  answers.assign(info.world_size, Answer());
  if (info.world_size > 1) listen_for_question();
  hosts = gather_strings(info.host);  // collective #1 and #2: the first ones with a deadline
  started = true;
}

}  // namespace

CollectiveCall enter_collective(const char* op) {
  CollectiveCall call;
  call.number = ++entered;
  call.op = op;
  call.entered = Clock::now();
  return call;
}

bool test_collective(const CollectiveCall& call, std::vector<MPI_Request>& requests) {
  if (requests.empty()) return true;
  int done = 0;
  MINIDL_MPI_CHECK(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE));
  if (done) {
    requests.clear();
    return true;
  }
  answer_questions(call.number);
  return false;
}

void wait_collective(const CollectiveCall& call, std::vector<MPI_Request>& requests) {
  const double timeout = collective_timeout();
  const Clock::duration limit =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
  const Clock::time_point began = Clock::now();
  while (!test_collective(call, requests)) {
    const Clock::time_point now = Clock::now();
    if (timeout > 0 && now - call.entered > limit) stop_job_after_timeout(call, timeout);
    pause_while_waiting(now - began);
  }
}

const ProcessInfo& process_info() {
  std::call_once(once, start);
  return info;
}

bool multi_process_supported() { return true; }

bool process_layer_started() { return started; }

std::vector<std::string> all_gather_strings(const std::string& mine) {
  process_info();
  return gather_strings(mine);
}

void broadcast_bytes(void* data, size_t n, int root) {
  process_info();
  MINIDL_CHECK(n <= static_cast<size_t>(INT32_MAX), "broadcast_bytes: ", n, " bytes is more than one MPI call moves");
  run_collective("broadcast_bytes", [&](MPI_Request* r) {
    return MPI_Ibcast(data, static_cast<int>(n), MPI_BYTE, root, MPI_COMM_WORLD, r);
  });
}

int max_over_ranks(int mine) {
  process_info();
  int largest = mine;
  run_collective("max_over_ranks", [&](MPI_Request* r) {
    return MPI_Iallreduce(&mine, &largest, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, r);
  });
  return largest;
}

void abort_job(int status) {
  if (started && info.world_size > 1) MPI_Abort(MPI_COMM_WORLD, status);
  std::exit(status);
}

std::string mpi_library_description() {
  // MPI_Get_library_version may be called before MPI_Init.
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string s(text, length);
  const size_t line_end = s.find_first_of(",\n");
  return str_cat(s.substr(0, line_end), " (MPI ", MPI_VERSION, ".", MPI_SUBVERSION, ")");
}

}  // namespace dist
}  // namespace minidl
