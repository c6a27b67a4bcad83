// examples/captcha/main.cpp — the `captcha` program: generate captchas, and train, evaluate and use a
// CNN + bidirectional GRU (or LSTM) + CTC recognizer (docs/captcha.md).
//
//   captcha gen --out DIR --count N ...            examples/captcha/gen.cpp
//   captcha train [--device D] [--steps N] ...      examples/captcha/train.cpp (flags: train_flags.cpp,
//                                                   data: train_data.cpp)
//   captcha eval --model FILE [--data DIR] ...      examples/captcha/eval.cpp
//   captcha predict --model FILE IMAGE...           examples/captcha/eval.cpp
//   captcha bench [--device D] [--batch N] ...      examples/captcha/bench.cpp (training-step timing)
//   captcha export --model FILE --safetensors OUT   examples/captcha/exchange.cpp (PyTorch's names)
//   captcha import --safetensors IN --save FILE     examples/captcha/exchange.cpp
// The model is in examples/captcha/model.h. Errors print "captcha: <message>" and exit with status 1
// (2 for bad flags and for an output that names an input: nn/files.h; 3 when training diverged:
// examples/train_guard.h).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/numerics.h"
#include "dist/process.h"
#include "examples/captcha/common.h"
#include "examples/flags.h"
#include "examples/train_guard.h"
#include "nn/files.h"

int main(int argc, char** argv) {
  CLI::App app{"captcha: generate captchas; recognise them with a CNN + bidirectional GRU (or LSTM) + CTC model."};
  app.require_subcommand(1);
  const std::vector<captcha::Command> commands = {captcha::add_gen_command(app), captcha::add_train_command(app),
                                                  captcha::add_eval_command(app), captcha::add_predict_command(app),
                                                  captcha::add_bench_command(app), captcha::add_export_command(app),
                                                  captcha::add_import_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "captcha: %s\nRun `captcha --help` or `captcha <command> --help` for usage.\n",
                 examples::parse_error_message(e).c_str());
    return 2;
  }
  try {
    minidl::check_environment();  // MINIDL_CUDA_MEMORY_LIMIT, MINIDL_CHECK_NUMERICS: a typo fails before any work
    minidl::check_fusion_environment();  // MINIDL_FUSE_RELU (nn/fuse_relu.h)
    for (const captcha::Command& c : commands)
      if (*c.app) return c.run();
  } catch (const minidl::OutputIsInputError& e) {
    return minidl::dist::report_error(e, "captcha", 2);  // an output names an input: a usage error (nn/files.h)
  } catch (const minidl::NonFiniteError& e) {
    // Training diverged (examples/train_guard.h; or MINIDL_CHECK_NUMERICS found a NaN): exit status 3. In
    // a job, when only this rank found it, the whole job ends with that status.
    return minidl::dist::report_error(e, "captcha", examples::kExitNonFinite);
  } catch (const std::exception& e) {
    // "captcha: <message>" (the generator's own errors already start so); in a --distributed job, an error
    // of this rank alone ends the whole job (dist/process.h).
    return minidl::dist::report_error(e, "captcha");
  }
  return 0;
}
