#include "dist/process.h"

#include <cstdio>
#include <cstdlib>

#include "core/settings.h"
#include "dist/backends.h"

namespace minidl {
namespace dist {

double collective_timeout() {
  static const double seconds = dist_timeout_seconds();  // MINIDL_DIST_TIMEOUT (core/settings.h)
  return seconds;
}

void agree_or_throw(const std::string& my_problem, const std::string& what) {
  const ProcessInfo& p = process_info();
  const std::vector<std::string> problems = all_gather_strings(my_problem);
  std::string listed;
  for (int r = 0; r < static_cast<int>(problems.size()); ++r) {
    if (problems[r].empty()) continue;
    if (!listed.empty()) listed += "; ";
    listed += p.world_size > 1 ? str_cat("rank ", r, ": ", problems[r]) : problems[r];
  }
  if (!listed.empty()) throw JobError(str_cat(what, ": ", listed));
}

void run_on_root(const std::function<void()>& work) {
  std::string problem;
  if (process_info().rank == 0) {
    try {
      work();
    } catch (const std::exception& e) {
      problem = e.what();
      if (problem.empty()) problem = "failed (an error without a message)";
    }
  }
  const std::string root_problem = all_gather_strings(problem)[0];
  if (!root_problem.empty()) throw JobError(root_problem);
}

int report_error(const std::exception& e, const std::string& program, int status) {
  std::fflush(stdout);
  const std::string prefix = program + ": ";
  const std::string message = e.what();
  // Messages that already name the program are not prefixed twice.
  const std::string text = message.rfind(prefix, 0) == 0 ? message : prefix + message;
  const bool in_job = process_layer_started() && process_info().world_size > 1;
  if (const auto* job_error = dynamic_cast<const JobError*>(&e)) {  // every rank has it: say it once, end normally
    if (!in_job || process_info().rank == 0) std::fprintf(stderr, "%s\n", text.c_str());
    return job_error->exit_status();
  }
  if (!in_job) {
    std::fprintf(stderr, "%s\n", text.c_str());
    return status;
  }
  const ProcessInfo& p = process_info();
  std::fprintf(stderr, "%srank %d (host %s): %s\n%s: ending all %d processes of the job\n", prefix.c_str(), p.rank,
               p.host.c_str(), text.substr(prefix.size()).c_str(), program.c_str(), p.world_size);
  std::fflush(stderr);
  abort_job(status);
}

}  // namespace dist
}  // namespace minidl
