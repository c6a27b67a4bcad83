// tools/bench/cases_sequence.cpp — bench cases of the captcha model's sequence keys: CTC loss, the fused
// GRU and LSTM cells, and the whole-sequence GRU and LSTM (each with its backward).
//
// Shape syntax:
//   ctc_loss      TxNxC,sS              log_probs [T, N, C], every sample with S targets and T steps
//   gru_cell      NxH                   gi, gh [N, 3H], h [N, H]
//   lstm_cell     NxH                   gi, gh [N, 4H], c [N, H]
//   gru_sequence, lstm_sequence  TxNxI,hH[,lL][,bi]   x [T, N, I], hidden size H, L layers (default 1),
//                                       bidirectional
// FLOP models (conventions in tools/bench/case.h):
//   ctc_loss: 12 per (sample, step, extended label) for the alpha recursion's logsumexp of three terms;
//   its backward 30: the beta recursion (12) and the gradient's exp, sum and scale per entry (18)
//   gru_cell 12 per hidden unit (r, z: an add and a sigmoid each; n: multiply, two adds, tanh; h_new 4);
//   its backward 17 (d_n 6, d_z 5, d_r 4, and a multiply each for grad_gh's n part and grad_h)
//   lstm_cell 13 per hidden unit (i, f, o, g: an add and an activation each; c_new 3; tanh(c_new) and
//   h_new 2); its backward 22 (dc 5, d_i, d_f, d_g, d_o 4 each, grad_c 1)
//   gru_sequence / lstm_sequence per layer, direction and step: the two GEMMs 2*N*(in + H)*G*H (G = 3 gate
//   blocks for the GRU, 4 for the LSTM) plus the cell's; the backward twice the GEMMs (gradients of the
//   inputs and of the weights) plus the cell's backward
// Bytes: inputs and parameters read once, outputs written once (a GRU reserve, private to each
// kernel, is not counted).
#include <algorithm>
#include <cmath>
#include <memory>

#include "ops/kernel_signatures.h"
#include "tools/bench/case.h"

namespace minidl {
namespace bench {

namespace {

const char* kCtcSyntax = "TxNxC,sS";

// {T, N, C, S}.
std::vector<int64_t> read_ctc(const std::string& key, const std::string& spec) {
  SpecReader r(key, spec, kCtcSyntax);
  r.expect_parts(2, 2, "log_probs' shape, then sS");
  const Shape s = r.sizes(0, {"T", "N", "C"});
  if (s[2] < 2) r.fail(str_cat("C = ", s[2], " must be at least 2 (the blank and a label)"));
  const LetterOption targets = r.options(1, "s", false).front();
  r.at_least(targets, "the number of targets", 1);
  r.numel(s, "log_probs");
  r.numel({s[1], s[0], r.product(2, targets.first, "the extended labels") + 1}, "the alpha table");
  return {s[0], s[1], s[2], targets.first};
}

// log_probs and the logits it is made from, the backward's gradient and a copy on the device; the alpha
// table, twice for the backward (made on the CPU, copied); targets and lengths (int64) twice.
double ctc_bytes(const std::string& key, const std::string& spec) {
  const std::vector<int64_t> s = read_ctc(key, spec);
  const double T = static_cast<double>(s[0]), N = static_cast<double>(s[1]), C = static_cast<double>(s[2]),
               S = static_cast<double>(s[3]);
  return (4 * T * N * C + 2 * N * T * (2 * S + 1) + 3 * N) * kFloatBytes + 2 * N * (S + 2) * kIndexBytes;
}

BenchCase ctc_case(const std::string& key, const std::string& spec, Device d) {
  const std::vector<int64_t> s = read_ctc(key, spec);
  const int64_t T = s[0], N = s[1], C = s[2], S = s[3], blank = 0;
  // log_probs: a log_softmax of random logits (made with the naive kernel on the CPU).
  Tensor logits = normal_input({T * N, C}, Device::cpu()), lp_cpu = output({T * N, C}, Device::cpu());
  run_naive_cpu<SoftmaxKernel>("log_softmax", logits, lp_cpu);
  lp_cpu = lp_cpu.view({T, N, C});
  Tensor targets_cpu = index_input({N, S}, 1, C, Device::cpu());  // never the blank
  Tensor input_lengths_cpu = full({N}, static_cast<double>(T), TensorOptions(DType::int64, Device::cpu()));
  Tensor target_lengths_cpu = full({N}, static_cast<double>(S), TensorOptions(DType::int64, Device::cpu()));
  Tensor log_probs = lp_cpu.to(d), targets = targets_cpu.to(d), input_lengths = input_lengths_cpu.to(d),
         target_lengths = target_lengths_cpu.to(d);
  const double entries = static_cast<double>(N) * T * (2 * S + 1);
  const double lp_bytes = static_cast<double>(T) * N * C * kFloatBytes;
  const double label_bytes = static_cast<double>(N) * (S + 2) * kIndexBytes;
  BenchCase c;
  if (key == "ctc_loss") {
    Tensor nll = output({N}, d), log_alpha = output({N, T, 2 * S + 1}, d);
    c.flops = 12 * entries;
    c.bytes = lp_bytes + label_bytes + (N + entries) * kFloatBytes;
    c.run = [=](const KernelInfo& k) mutable {
      return call_as<CtcLossKernel>(k, log_probs, targets, input_lengths, target_lengths, blank, false, nll,
                                    log_alpha);
    };
    // Only nll is compared: cuDNN's kernel cannot produce the alpha table (ops/kernel_signatures.h).
    c.outputs = [=] { return std::vector<Tensor>{nll}; };
  } else {
    // The backward reads the forward's alpha table: made by the naive forward on the CPU.
    Tensor nll_cpu = output({N}, Device::cpu()), alpha_cpu = output({N, T, 2 * S + 1}, Device::cpu());
    run_naive_cpu<CtcLossKernel>("ctc_loss", lp_cpu, targets_cpu, input_lengths_cpu, target_lengths_cpu, blank, false,
                                 nll_cpu, alpha_cpu);
    Tensor log_alpha = alpha_cpu.to(d), grad_nll = uniform_input({N}, 0.5, 1.5, d), grad = output({T, N, C}, d);
    c.flops = 30 * entries;
    c.bytes = 2 * lp_bytes + label_bytes + (N + entries) * kFloatBytes;
    c.run = [=](const KernelInfo& k) mutable {
      return call_as<CtcLossBackwardKernel>(k, log_probs, targets, input_lengths, target_lengths, log_alpha, grad_nll,
                                            blank, false, grad);
    };
    c.outputs = [=] { return std::vector<Tensor>{grad}; };
  }
  return c;
}

// {N, H} of a cell with `blocks` blocks of H in its widest tensor (the GRU's gates 4H, the LSTM's 5H).
Shape read_cell(const std::string& key, const std::string& spec, int64_t blocks) {
  SpecReader r(key, spec, "NxH");
  r.expect_parts(1, 1, "N x H");
  const Shape s = r.sizes(0, {"N", "H"});
  r.numel({s[0], blocks, s[1]}, "the gates");
  return s;
}

// In units of N*H floats: the GRU's forward 12 (gi, gh 3 each, h, h_new, gates 4), its backward 30 (the
// forward's on the CPU, grad_h_new, grad_gi, grad_gh, grad_h); the LSTM's 16 and 36 likewise.
double cell_bytes(const std::string& key, const std::string& spec) {
  const bool lstm = key.rfind("lstm", 0) == 0, backward = key.find(".backward") != std::string::npos;
  const Shape s = read_cell(key, spec, lstm ? 5 : 4);
  const double units = lstm ? (backward ? 36 : 16) : (backward ? 30 : 12);
  return units * float_bytes(s[0] * s[1]);
}

BenchCase gru_cell_case(const std::string& key, const std::string& spec, Device d) {
  const Shape s = read_cell(key, spec, 4);
  const int64_t N = s[0], H = s[1];
  const double units = static_cast<double>(N) * H;
  Tensor gi = normal_input({N, 3 * H}, d), gh = normal_input({N, 3 * H}, d), h = uniform_input({N, H}, -1, 1, d);
  BenchCase c;
  if (key == "gru_cell") {
    Tensor h_new = output({N, H}, d), gates = output({N, 4 * H}, d);
    c.flops = 12 * units;
    c.bytes = 12 * units * kFloatBytes;  // read gi, gh (3H each), h; write h_new, gates (4H)
    c.run = [=](const KernelInfo& k) mutable { return call_as<GruCellKernel>(k, gi, gh, h, h_new, gates); };
    c.outputs = [=] { return std::vector<Tensor>{h_new, gates}; };
  } else {
    // The backward reads the forward's gates: made by the naive forward on the CPU.
    Tensor h_cpu = h.to(Device::cpu()), h_new_cpu = output({N, H}, Device::cpu());
    Tensor gates_cpu = output({N, 4 * H}, Device::cpu());
    run_naive_cpu<GruCellKernel>("gru_cell", gi.to(Device::cpu()), gh.to(Device::cpu()), h_cpu, h_new_cpu, gates_cpu);
    Tensor gates = gates_cpu.to(d), grad_h_new = normal_input({N, H}, d);
    Tensor grad_gi = output({N, 3 * H}, d), grad_gh = output({N, 3 * H}, d), grad_h = output({N, H}, d);
    c.flops = 17 * units;
    c.bytes = 13 * units * kFloatBytes;  // read grad_h_new, h, gates (4H); write grad_gi, grad_gh (3H), grad_h
    c.run = [=](const KernelInfo& k) mutable {
      return call_as<GruCellBackwardKernel>(k, grad_h_new, h, gates, grad_gi, grad_gh, grad_h);
    };
    c.outputs = [=] { return std::vector<Tensor>{grad_gi, grad_gh, grad_h}; };
  }
  return c;
}

// c [N, H] -> h_new, c_new [N, H], gates [N, 5H]; backward from grad_h_new, grad_c_new, c and the gates.
BenchCase lstm_cell_case(const std::string& key, const std::string& spec, Device d) {
  const Shape s = read_cell(key, spec, 5);
  const int64_t N = s[0], H = s[1];
  const double units = static_cast<double>(N) * H;
  Tensor gi = normal_input({N, 4 * H}, d), gh = normal_input({N, 4 * H}, d), c = uniform_input({N, H}, -1, 1, d);
  BenchCase bc;
  if (key == "lstm_cell") {
    Tensor h_new = output({N, H}, d), c_new = output({N, H}, d), gates = output({N, 5 * H}, d);
    bc.flops = 13 * units;
    bc.bytes = 16 * units * kFloatBytes;  // read gi, gh (4H each), c; write h_new, c_new, gates (5H)
    bc.run = [=](const KernelInfo& k) mutable { return call_as<LstmCellKernel>(k, gi, gh, c, h_new, c_new, gates); };
    bc.outputs = [=] { return std::vector<Tensor>{h_new, c_new, gates}; };
  } else {
    // The backward reads the forward's gates: made by the naive forward on the CPU.
    Tensor c_cpu = c.to(Device::cpu()), h_cpu = output({N, H}, Device::cpu()), c_new_cpu = output({N, H}, Device::cpu());
    Tensor gates_cpu = output({N, 5 * H}, Device::cpu());
    run_naive_cpu<LstmCellKernel>("lstm_cell", gi.to(Device::cpu()), gh.to(Device::cpu()), c_cpu, h_cpu, c_new_cpu,
                                  gates_cpu);
    Tensor gates = gates_cpu.to(d), grad_h_new = normal_input({N, H}, d), grad_c_new = normal_input({N, H}, d);
    Tensor grad_gates = output({N, 4 * H}, d), grad_c = output({N, H}, d);
    bc.flops = 22 * units;
    bc.bytes = 13 * units * kFloatBytes;  // read grad_h_new, grad_c_new, c, gates (5H); write grad_gates (4H), grad_c
    bc.run = [=](const KernelInfo& k) mutable {
      return call_as<LstmCellBackwardKernel>(k, grad_h_new, grad_c_new, c, gates, grad_gates, grad_c);
    };
    bc.outputs = [=] { return std::vector<Tensor>{grad_gates, grad_c}; };
  }
  return bc;
}

const char* kRnnSequenceSyntax = "TxNxI,hH[,lL][,bi]";

// What the forward and backward cases share; the backward's prepare runs a forward into it.
struct RnnSequenceState {
  Tensor x, y, grad_y, grad_x;
  std::vector<Tensor> params, grad_params;
  int layers = 1;
  bool bidirectional = false;
  RnnSequenceReserve reserve;
};

struct RnnSequenceSpec {
  int64_t T = 0, N = 0, I = 0, H = 0, layers = 1;
  bool bidirectional = false;
};

RnnSequenceSpec read_rnn_sequence(const std::string& key, const std::string& spec) {
  SpecReader r(key, spec, kRnnSequenceSyntax);
  r.expect_parts(2, 4, "x's shape, then hH, lL, bi");
  const Shape s = r.sizes(0, {"T", "N", "I"});
  RnnSequenceSpec q;
  q.T = s[0], q.N = s[1], q.I = s[2];
  bool have_hidden = false;
  for (size_t i = 1; i < r.parts(); ++i) {
    if (r.word(i, "bi")) {
      q.bidirectional = true;
      continue;
    }
    const char letter = r.part(i)[0];
    if (letter != 'h' && letter != 'l') r.fail(str_cat("unknown option '", r.part(i), "' (options: hH, lL, bi)"));
    const LetterOption o = r.options(i, "hl", false).front();
    if (letter == 'h') {
      r.at_least(o, "the hidden size", 1);
      q.H = o.first, have_hidden = true;
    } else {
      r.at_least(o, "the number of layers", 1);
      q.layers = o.first;
    }
  }
  if (!have_hidden) r.fail("the hidden size hH is required");
  const int64_t gates = key.rfind("lstm", 0) == 0 ? 4 : 3, dirs = q.bidirectional ? 2 : 1;
  r.numel({q.T, q.N, q.I}, "x");
  r.numel({q.T, q.N, q.H, dirs, gates + 2}, "a layer's saved values");
  r.numel({gates, q.H, std::max(q.I, q.H * dirs)}, "w_ih");
  return q;
}

// x, y, the parameters and, for the backward, grad_y, grad_x and the parameters' gradients; the
// reserve, estimated as G + 2 values per unit and step of every layer and direction (the naive kernel's
// saved gate values) and every layer's output but the last.
double rnn_sequence_bytes(const std::string& key, const std::string& spec) {
  const RnnSequenceSpec q = read_rnn_sequence(key, spec);
  const double T = static_cast<double>(q.T), N = static_cast<double>(q.N), I = static_cast<double>(q.I),
               H = static_cast<double>(q.H), L = static_cast<double>(q.layers);
  const double G = key.rfind("lstm", 0) == 0 ? 4 : 3, dirs = q.bidirectional ? 2 : 1;
  const double params = dirs * (G * H * (I + H + 2) + (L - 1) * G * H * (H * dirs + H + 2));
  const double io = T * N * I + T * N * H * dirs;
  const double reserve = L * dirs * T * N * H * (G + 2) + (L - 1) * T * N * H * dirs;
  const bool backward = key.find(".backward") != std::string::npos;
  return (2 * params + (backward ? 2 : 1) * io + reserve) * kFloatBytes;
}

// The GRU (3 gate blocks) or the LSTM (4), by key.
BenchCase rnn_sequence_case(const std::string& key, const std::string& spec, Device d) {
  const bool lstm = key.rfind("lstm", 0) == 0;
  const int64_t G = lstm ? 4 : 3;
  const double cell_forward = lstm ? 13 : 12, cell_backward = lstm ? 22 : 17;
  const RnnSequenceSpec q = read_rnn_sequence(key, spec);
  const int64_t T = q.T, N = q.N, I = q.I, H = q.H;
  auto st = std::make_shared<RnnSequenceState>();
  st->layers = static_cast<int>(q.layers);
  st->bidirectional = q.bidirectional;
  const int64_t dirs = st->bidirectional ? 2 : 1;
  const double bound = 1.0 / std::sqrt(static_cast<double>(H));  // PyTorch's GRU and LSTM initialisation
  double gemm_flops = 0, param_numel = 0;
  for (int layer = 0; layer < st->layers; ++layer)
    for (int64_t dir = 0; dir < dirs; ++dir) {
      const int64_t in = layer == 0 ? I : H * dirs;
      for (const Shape& shape : {Shape{G * H, in}, Shape{G * H, H}, Shape{G * H}, Shape{G * H}}) {
        st->params.push_back(uniform_input(shape, -bound, bound, d));
        st->grad_params.push_back(output(shape, d));
        param_numel += static_cast<double>(shape_numel(shape));
      }
      gemm_flops += 2.0 * T * N * (in + H) * G * H;
    }
  const double cells = static_cast<double>(st->layers) * dirs * T * N * H;
  const double x_bytes = static_cast<double>(T) * N * I * kFloatBytes;
  const double y_bytes = static_cast<double>(T) * N * H * dirs * kFloatBytes;
  st->x = normal_input({T, N, I}, d);
  st->y = output({T, N, H * dirs}, d);
  BenchCase c;
  const std::string forward_key = key.substr(0, key.find('.'));
  if (key == forward_key) {
    c.flops = gemm_flops + cell_forward * cells;
    c.bytes = x_bytes + param_numel * kFloatBytes + y_bytes;
    c.run = [st](const KernelInfo& k) {
      return call_as<RnnSequenceKernel>(k, st->x, st->params, st->layers, st->bidirectional, true, st->y, st->reserve);
    };
    c.outputs = [st] { return std::vector<Tensor>{st->y}; };
    return c;
  }
  st->grad_y = normal_input({T, N, H * dirs}, d);
  st->grad_x = output({T, N, I}, d);
  // A backward reads a reserve only its own forward writes, and may use it up: run that forward first.
  c.prepare = [st, forward_key](const KernelInfo& k) {
    for (const KernelInfo* forward : KernelRegistry::instance().candidates(forward_key, k.device))
      if (forward->name == k.name) {
        if (!call_as<RnnSequenceKernel>(*forward, st->x, st->params, st->layers, st->bidirectional, true, st->y,
                                        st->reserve))
          return str_cat("its forward kernel '", k.name, "' declined");
        return std::string();
      }
    return str_cat("no forward kernel '", k.name, "' to make its reserve");
  };
  c.flops = 2 * gemm_flops + cell_backward * cells;
  c.bytes = 2 * x_bytes + 2 * param_numel * kFloatBytes + 2 * y_bytes;
  c.run = [st](const KernelInfo& k) {
    return call_as<RnnSequenceBackwardKernel>(k, st->grad_y, st->x, st->params, st->layers, st->bidirectional, st->y,
                                              st->reserve, st->grad_x, st->grad_params);
  };
  c.outputs = [st] {
    std::vector<Tensor> out{st->grad_x};
    out.insert(out.end(), st->grad_params.begin(), st->grad_params.end());
    return out;
  };
  return c;
}

}  // namespace

void add_sequence_cases(std::vector<CaseFamily>& families) {
  families.push_back({concat(MINIDL_BENCH_KEYS(CtcLossKernel, {"ctc_loss"}),
                             MINIDL_BENCH_KEYS(CtcLossBackwardKernel, {"ctc_loss.backward"})),
                      kCtcSyntax,
                      "log_probs [T, N, C]; S targets per sample, none the blank (0)",
                      "6x2x5,s2",
                      {{"12x128x37,s4", "captcha loss: 12 steps, 4 characters"}, {"200x64x96,s50", "large"}},
                      ctc_bytes,
                      ctc_case});
  families.push_back({concat(MINIDL_BENCH_KEYS(GruCellKernel, {"gru_cell"}),
                             MINIDL_BENCH_KEYS(GruCellBackwardKernel, {"gru_cell.backward"})),
                      "NxH",
                      "N rows, H hidden units (gi, gh [N, 3H])",
                      "3x4",
                      {{"128x128", "captcha GRU step"}, {"4096x1024", "large"}},
                      cell_bytes,
                      gru_cell_case});
  families.push_back({concat(MINIDL_BENCH_KEYS(LstmCellKernel, {"lstm_cell"}),
                             MINIDL_BENCH_KEYS(LstmCellBackwardKernel, {"lstm_cell.backward"})),
                      "NxH",
                      "N rows, H hidden units (gi, gh [N, 4H])",
                      "3x4",
                      {{"128x128", "captcha --rnn lstm step"}, {"4096x1024", "large"}},
                      cell_bytes,
                      lstm_cell_case});
  families.push_back({concat(MINIDL_BENCH_KEYS(RnnSequenceKernel, {"gru_sequence"}),
                             concat(MINIDL_BENCH_KEYS(RnnSequenceBackwardKernel, {"gru_sequence.backward"}),
                                    concat(MINIDL_BENCH_KEYS(RnnSequenceKernel, {"lstm_sequence"}),
                                           MINIDL_BENCH_KEYS(RnnSequenceBackwardKernel, {"lstm_sequence.backward"})))),
                      kRnnSequenceSyntax,
                      "x [T, N, I]; h hidden size, l layers (default 1), bi bidirectional",
                      "4x2x3,h5,l2,bi",
                      {{"12x128x512,h128,l2,bi", "captcha RNN (GRU, or LSTM with --rnn lstm)"},
                       {"64x64x256,h256,l1", "large: 64 steps"}},
                      rnn_sequence_bytes,
                      rnn_sequence_case});
}

}  // namespace bench
}  // namespace minidl
