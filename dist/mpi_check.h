// dist/mpi_check.h — MINIDL_MPI_CHECK: every MPI call is checked and a failure throws a minidl::Error
// naming the call, MPI's message, the file and the line (MPI returns error codes because minidl sets
// MPI_ERRORS_RETURN on its communicators). For the MPI files of dist/ only.
#pragma once
// The C API only: without these, Open MPI's (and MPICH's) mpi.h drags in the deprecated C++ bindings,
// which need a library of their own (libmpi_cxx).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <string>

#include "core/error.h"

namespace minidl {
namespace dist {

inline std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length);
}

}  // namespace dist
}  // namespace minidl

#define MINIDL_MPI_CHECK(call)                                                                              \
  do {                                                                                                      \
    const int rc_ = (call);                                                                                 \
    MINIDL_CHECK(rc_ == MPI_SUCCESS, "MPI: ", #call, " failed: ", ::minidl::dist::mpi_error_text(rc_), " (", \
                 __FILE__, ":", __LINE__, ")");                                                             \
  } while (0)
