// examples/course/worked_examples.h — the worked examples of the course (docs/course/): small programs
// that run the real code and print the numbers a chapter shows. `course_example NAME` prints one; the test
// tests/test_course_docs.cpp runs each and compares its output with the text block the chapter quotes, so
// a chapter's numbers cannot drift from what the code does.
#pragma once
#include <string>
#include <vector>

namespace course {

// The examples' names, in the course's order: tensors, autograd, dispatch, im2col, mnist_model, ctc, roofline.
std::vector<std::string> worked_example_names();

// The text example `name` prints. Throws minidl::Error for an unknown name.
std::string run_worked_example(const std::string& name);

}  // namespace course
