// dist/mpi_runtime.cpp — the process layer over MPI (builds with MINIDL_WITH_MPI; dist/process.h).
//
// MPI is initialised on the first process_info() call, not at program start: a program that never asks
// for a distributed run never touches MPI. MPI_THREAD_FUNNELED is enough: only the main thread calls MPI
// (the data loader's and OpenMP's threads never do). MPI_Finalize is registered with atexit.
#include <cstdlib>
#include <mutex>

#include "dist/backends.h"
#include "dist/mpi_check.h"
#include "dist/process.h"

namespace minidl {
namespace dist {

namespace {

ProcessInfo info;
bool started = false;
std::once_flag once;

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void start() {
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
  started = true;
}

}  // namespace

const ProcessInfo& process_info() {
  std::call_once(once, start);
  return info;
}

bool multi_process_supported() { return true; }

bool process_layer_started() { return started; }

std::vector<std::string> all_gather_strings(const std::string& mine) {
  const ProcessInfo& p = process_info();
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(p.world_size);
  MINIDL_MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD));
  std::vector<int> offsets(p.world_size, 0);
  for (int r = 1; r < p.world_size; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::string joined(static_cast<size_t>(offsets.back() + lengths.back()), '\0');
  MINIDL_MPI_CHECK(MPI_Allgatherv(mine.data(), length, MPI_CHAR, joined.data(), lengths.data(), offsets.data(),
                                  MPI_CHAR, MPI_COMM_WORLD));
  std::vector<std::string> out(p.world_size);
  for (int r = 0; r < p.world_size; ++r) out[r] = joined.substr(offsets[r], lengths[r]);
  return out;
}

void broadcast_bytes(void* data, size_t n, int root) {
  process_info();
  MINIDL_CHECK(n <= static_cast<size_t>(INT32_MAX), "broadcast_bytes: ", n, " bytes is more than one MPI call moves");
  MINIDL_MPI_CHECK(MPI_Bcast(data, static_cast<int>(n), MPI_BYTE, root, MPI_COMM_WORLD));
}

int max_over_ranks(int mine) {
  process_info();
  int largest = mine;
  MINIDL_MPI_CHECK(MPI_Allreduce(&mine, &largest, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
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
