// examples/course/main.cpp — `course_example NAME`: prints one of the course's worked examples
// (examples/course/worked_examples.h); without a name, lists them.
#include <cstdio>
#include <exception>

#include "examples/course/worked_examples.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::printf("usage: course_example NAME\nworked examples (docs/course/ quotes each):");
    for (const std::string& name : course::worked_example_names()) std::printf(" %s", name.c_str());
    std::printf("\n");
    return argc == 1 ? 0 : 2;
  }
  try {
    std::fputs(course::run_worked_example(argv[1]).c_str(), stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "course_example: %s\n", e.what());
    return 1;
  }
  return 0;
}
