// tools/bench/cases.cpp — the table of bench case families: every kernel key of ops/kernel_signatures.h
// has one (a test checks that every registered key is served). A new op adds its family in a
// cases_*.cpp file and one call here.
#include "tools/bench/case.h"

namespace minidl {
namespace bench {

const std::vector<CaseFamily>& case_families() {
  static const std::vector<CaseFamily> families = [] {
    std::vector<CaseFamily> f;
    add_elementwise_cases(f);
    add_row_cases(f);
    add_dense_cases(f);
    add_norm_optim_cases(f);
    add_sequence_cases(f);
    return f;
  }();
  return families;
}

const CaseFamily* find_case_family(const std::string& key) {
  for (const CaseFamily& family : case_families())
    for (const CaseKey& k : family.keys)
      if (k.key == key) return &family;
  return nullptr;
}

const CaseKey* find_case_key(const std::string& key) {
  for (const CaseFamily& family : case_families())
    for (const CaseKey& k : family.keys)
      if (k.key == key) return &k;
  return nullptr;
}

}  // namespace bench
}  // namespace minidl
