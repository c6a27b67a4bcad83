#!/usr/bin/env bash
# scripts/h200-run.sh — what the issues ask to be measured on the GPU, for one device call:
# `minidl info`, the whole test binary, MNIST timings (default and all-hand-written kernels, batch 64
# and 256), the kernel benchmark, the GPU tests under compute-sanitizer memcheck, the captcha training
# with default settings and its evaluation on 10,000 fresh captchas (captcha_lstm: the same with the LSTM
# of captcha_break's recipe), the captcha step benchmark, the PyTorch side-by-side comparison, and
# `minidl compare` (the MNIST CNN on this GPU and on this CPU: table.md, curves.svg in $OUT/compare).
# More steps, asked for by name (docs/results/README.md, "H200, 2026-12-03 evening"):
#   racecheck        compute-sanitizer racecheck over the [cuda] tests in nine groups side by side, and over
#                    every matmul kernel on small shapes through `minidl bench` (~7 minutes)
#   deterministic    the cost of --deterministic: mnist and captcha bench with and without it, alternated
#   lined            own-captcha training before/after augmentation: 10,000 lined captchas, 40 epochs, two
#                    runs side by side (~5 minutes; needs DejaVuSerif-Bold.ttf and DejaVuSansMono-Bold.ttf
#                    of fonts-dejavu-core in data/fonts/)
#   epochs           whole MNIST epochs against PyTorch at batch 64 and 1024 (scripts/compare-torch.sh)
#   recipe           `mnist train --recipe fast --target-accuracy 0.99` over seeds 1 to 10
#   fusion           the fused ReLU epilogues (bias_relu, batch_norm_relu): their tests and benchmarks, then
#                    mnist and captcha bench with MINIDL_FUSE_RELU=1 and 0, alternated twice; a device without
#                    the fused kernels runs both unfused (the tests say so)
#   conv_rule        conv2d's per-shape rule (cuda/conv_by_shape.cu): every conv2d kernel at MNIST's first
#                    convolution for batches 64, 256 and 1024, then mnist bench (batch 64 and 1024) with the
#                    rule and with --kernel conv2d=cudnn, alternated twice
#   pack             the pack kernels (DataParallel's buckets) at their default shapes
#   tf32_diag        why TF32 slows the MNIST step: mnist bench with MINIDL_TF32=0 and 1 under Nsight Compute
#                    (kernel names and GPU times only, --clock-control none), and plain bench runs alternated
#   tf32_conv        the convolution ladder against cuDNN with TF32 allowed on both sides (MINIDL_TF32=1)
#   lab2             issue 25: mnist and captcha bench with the default order and with --kernel '*=auto'
#                    alternated twice, MINIDL_PROFILE=1 and =shapes on an MNIST step, its shapes benched,
#                    matmul benched against a baseline of itself, a matmul size sweep (CSV and SVG)
#   issue26          the new [cuda] paths (memory formats, CUDA graphs, bf16_wgmma, batch norm/pool/conv/CTC) and
#                    memcheck over them, channels-last against NCHW and eager against the CUDA graph on both
#                    examples' steps, the BF16 rung against cuBLAS, the GPU exercises 6 and 6b (needs their
#                    binaries in $BUILD/bin)
#   profile26        issue 26, round 2: the captcha step's time per kernel and call shape (MINIDL_PROFILE) in
#                    NCHW and NHWC under TF32, every launch of a step under Nsight Compute (CSV), an MNIST
#                    step's profile, one training epoch with 16 and 8 rendering threads
#   formats26        both memory formats on the captcha step (CUDA graph) under TF32, BF16 and FP32, alternated
#                    twice; the NHWC TF32 step's profile
#   graph26          conv2d through cuDNN's graph API against its classic API on the channels-last captcha step
#   train26          `captcha train` with its defaults (wall time to the saved model), then `captcha eval`
#   bf16acts26       issue 26, deliverable 3 (bfloat16 activations): the [bf16] tests and memcheck over the CUDA
#                    ones, the BF16 captcha step with --activations fp32 and bf16 alternated twice, `captcha train
#                    --precision bf16 --activations bf16` and its evaluation (~6 minutes)
#   bn26             issue 26, round 3: batch norm's step 1 with several loads in flight and the running
#                    statistics in one launch, against the build in $OLD (default build-old): the batch-norm
#                    kernels at the captcha model's block-1 and block-3 shapes (minidl bench), the captcha step
#                    (CUDA graph, channels-last) under TF32 and BF16, alternated twice; the [batch_norm] and
#                    [norm] tests and memcheck over the CUDA ones; the new step's profile
#   wgrad26          issue 26, round 4: the channels-last 3x3 weight gradients (nhwc_3x3_*) against cuDNN's graph
#                    API at the captcha model's shapes (minidl bench, MINIDL_TF32=1), the captcha step (CUDA
#                    graph, channels-last) under TF32 and BF16 with each as the weight gradient, alternated twice;
#                    the [conv2d] and [memory_format] tests and memcheck over the new kernel's; the step's profile
#   quads26          issue 26, round 5: batch norm's float32 rows four channels a load (v2_split's quads) against
#                    the build in $OLD (default build-old): the [batch_norm] tests and memcheck over them, the
#                    kernels at the captcha model's rows shapes, the captcha step (CUDA graph, channels-last)
#                    under TF32 and BF16 alternated twice; then the new step's batch-norm kernels under Nsight
#                    Compute (GPU time and DRAM traffic per kernel, scripts/ncu_by_kernel.py); QUADS_NCU=all
#                    profiles every kernel of that step and of an MNIST batch-64 step instead
#   fusion26         issue 26, round 8: cuDNN's graph-API fusions (conv + bias + ReLU, conv + batch-norm statistics)
#                    probed at the models' shapes (tools/probes/cudnn_fusion.cpp; $PROBE, default
#                    $BUILD/bin/cudnn_fusion_probe), and minidl's bias_relu at MNIST's conv outputs
#   rule26           issue 26, round 6: nhwc_3x3_tf32 serving C x K <= 4096 (64 x 64 channels too) against the
#                    build in $OLD (default build-old, the rule at 2048): the [cuda][conv2d] and
#                    [memory_format][cuda] tests and memcheck over the kernel's, the 64 x 64 weight gradient
#                    against cuDNN's graph API, the captcha step (CUDA graph, channels-last) under TF32 and BF16
#                    alternated twice
#   bnq26            issue 26, round 6: the [batch_norm] and [norm] tests and memcheck over the CUDA ones (the
#                    quad kernels in their own file, cuda/batchnorm_v2_quads.cuh)
#   mwgrad26         issue 26: MNIST conv2's weight gradient (x 64x32x26x26, w 64x32x3x3) by every kernel, NCHW
#                    and channels-last, and the eager MNIST batch-64 step's time per key and kernel (MINIDL_PROFILE)
#   igemm26          issue 26: MNIST conv2 (x 64x32x26x26, w 64x32x3x3) by every conv2d kernel, all three stages;
#                    then the MNIST step (CUDA graph, batch 64 and 1024) and the FP32 captcha step (CUDA graph,
#                    NCHW) with their default kernels and with --kernel conv2d.backward_weight=implicit_gemm
#                    (our split-K FP32 weight gradient in place of cuDNN's), alternated twice
#   fewout26         issue 26, round 7: the weight-gradient rule for few outputs and long sums (cuda/conv_by_shape.cu;
#                    commit 5738885, reverted in fb87e8c until this step has run on it: cherry-pick it first)
#                    against the build in $OLD (default build-old): the [cuda][conv2d] tests and memcheck over the
#                    rule's, the MNIST step (CUDA graph, batch 64 and 1024) and the FP32 captcha step (CUDA graph,
#                    NCHW), then the captcha step (CUDA graph, channels-last) under TF32 and BF16, alternated twice
#   fused26          issue 26, round 8: conv2d_bias_relu (cuDNN's conv + bias + ReLU in one plan,
#                    cuda/conv_bias_relu_cudnn_graph.cu): the [cuda][conv2d] and [cuda][nn] tests and memcheck
#                    over the fused kernel's, the fused kernel against conv2d's at MNIST's convolutions, the MNIST
#                    step (CUDA graph, batch 64 and 1024) fused and unfused (--kernel conv2d=by_shape: the default
#                    convolution selected, which turns the fusion off), alternated twice, and a default MNIST training
#   pool26           issue 26, round 9: conv2d_bias_relu_max_pool2d (the ReLU's mask and the bias gradient on the
#                    pooled grid) against the build in $OLD (default build-old): the [cuda][conv2d], [cuda][nn] and
#                    [pool] tests and memcheck over the fused ops', the MNIST step (CUDA graph, batch 64 and 1024)
#                    and the FP32 captcha step, alternated twice, the eager MNIST step, a default MNIST training
#   small26          issue 26, round 10: nchw_small_filter (the NCHW weight gradient of small filters, MNIST's conv1)
#                    against the build in $OLD (default build-old): the [cuda][conv2d] tests and memcheck over the
#                    kernel's and by_shape's, every weight-gradient kernel at MNIST conv1 (batch 64, 1024) and an
#                    RGB 3x3 (minidl bench), the fp32 steps and the eager MNIST step alternated twice, a training
#   adam26           issue 26, round 11: the optimizer kernels with 4 loads in flight per thread against the build
#                    in $OLD (default build-old): the [optim] tests and memcheck over them, adam_step and sgd_step at
#                    the MNIST model's parameters (minidl bench, each build twice), the fp32 steps and the eager
#                    MNIST step alternated twice, a training
#   tf32ncu          issue 26, round 11: tf32_wgmma_v3 and bf16_wgmma against cuBLAS TF32 at 4096^3 (NN, NT) and
#                    2048^3, then tf32_wgmma_v3 and cuBLAS at 4096^3 NT under ncu (speed of light, memory, occupancy)
#   l2ncu            issue 26, round 12: tf32_wgmma_v3 and cuBLAS TF32 at 4096^3 NT under ncu: L2 sectors by source,
#                    instructions executed, sampled warp stalls (membar, barrier, wait, long scoreboard)
#   prof26           issue 26, round 11: the captcha step's kernels under BF16 and TF32 (MINIDL_PROFILE, channels-last)
#   acc26            issue 26, round 7: the captcha time-to-accuracy target with other settings: `captcha train`
#                    (defaults plus each variant in ACC26, ';'-separated flag lists; default: seeds 2 and 3 of the
#                    defaults, round 6's defaults lr 1e-3 with dropout 0.25, and lr 3e-3) timed from start to saved
#                    model, then `captcha eval` on 10,000 fresh captchas (~60 s a variant)
#   graph            CUDA graphs (nn/graphed_step.h): the [graph] and [dropout] tests, memcheck over [graph],
#                    mnist bench eager and --cuda-graph at batch 64, 256 and 1024 alternated twice, the fast
#                    recipe over seeds 1 to 5 eager and --cuda-graph, and two epochs at batch 64 each way
# Each step has its own time limit; logs go to $OUT/<step>.log and a summary to $OUT/summary.log. The
# default steps fit one 10-minute call; captcha (~2 minutes with its 12-epoch TF32 default), torch (~2)
# and compare (~1-2) are asked for by name.
#   BUILD=build-cuda DATA=data/mnist bash scripts/h200-run.sh [STEP...]
# The machine has no fonts: carry data/fonts/DejaVuSans-Bold.ttf and it is used for the captchas.
set -u
bin=${BUILD:-build-cuda}/bin
data=${DATA:-data/mnist}
out=${OUT:-/tmp/minidl-h200}
mkdir -p "$out"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-16}
[ -f data/fonts/DejaVuSans-Bold.ttf ] && export MINIDL_CAPTCHA_FONT=${MINIDL_CAPTCHA_FONT:-$PWD/data/fonts/DejaVuSans-Bold.ttf}
hand_written="matmul=v3_register_blocked,conv2d=im2col_gemm,avg_pool2d=v1_direct,batch_norm=v1_two_pass,max_pool2d=v1_direct"

run() {  # run NAME SECONDS COMMAND...
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "step $name: exit $rc after $((SECONDS - start))s" | tee -a "$out/summary.log"
  tail -n 3 "$out/$name.log"
}

step_means() {  # step_means LOG...: each log's name and its first "ms/step mean" line, into the summary
  local f
  for f in "$@"; do
    echo "$(basename "$f" .log): $(grep -h "ms/step mean" "$f" | head -1)" | tee -a "$out/summary.log"
  done
}

ab_summary() {  # ab_summary PREFIX: the mean step time of each PREFIX_*_old_* and PREFIX_*_new_* log
  step_means "$out/$1"_*_old_*.log "$out/$1"_*_new_*.log
}

ab_captcha_steps() {  # ab_captcha_steps PREFIX OLD_BIN: the captcha step (CUDA graph, channels-last) under TF32 and
  # BF16, the build in OLD_BIN against this one, alternated twice; logs PREFIX_<precision>_<old|new>_<round>
  local prefix=$1 old_bin=$2 r prec side b
  for r in 1 2; do
    for prec in tf32 bf16; do
      for side in old new; do
        b=$bin; [ $side = old ] && b=$old_bin
        run "${prefix}_${prec}_${side}_$r" 40 "$b/captcha" bench --device cuda --batch 128 --memory-format nhwc \
          --precision $prec --cuda-graph
      done
    done
  done
}

fp32_steps() {  # fp32_steps PREFIX SUFFIX BIN [FLAG...]: the MNIST step at batch 64 and 1024 and the FP32 captcha step
  # (NCHW, batch 128), all replayed from a CUDA graph, by BIN's programs with FLAGs; logs PREFIX_mnist_b64_SUFFIX,
  # PREFIX_mnist_b1024_SUFFIX and PREFIX_captcha_fp32_SUFFIX
  local prefix=$1 suffix=$2 b=$3 batch
  shift 3
  for batch in 64 1024; do
    run "${prefix}_mnist_b${batch}_$suffix" 40 "$b/mnist" bench --device cuda --batch $batch --cuda-graph "$@"
  done
  run "${prefix}_captcha_fp32_$suffix" 60 "$b/captcha" bench --device cuda --batch 128 --precision fp32 \
    --memory-format nchw --cuda-graph "$@"
}

ab_fp32_steps() {  # ab_fp32_steps PREFIX OLD_BIN: fp32_steps by the build in OLD_BIN and by this one, alternated
  # twice; logs PREFIX_<step>_<old|new>_<round>
  local prefix=$1 old_bin=$2 r side b
  for r in 1 2; do
    for side in old new; do
      b=$bin; [ $side = old ] && b=$old_bin
      fp32_steps "$prefix" "${side}_$r" "$b"
    done
  done
}

ab_eager_mnist() {  # ab_eager_mnist PREFIX OLD_BIN: the eager MNIST step at batch 64 by the build in OLD_BIN and by
  # this one, alternated twice; logs PREFIX_eager_b64_<old|new>_<round>
  local r
  for r in 1 2; do
    run "$1_eager_b64_old_$r" 40 "$2/mnist" bench --device cuda --batch 64
    run "$1_eager_b64_new_$r" 40 "$bin/mnist" bench --device cuda --batch 64
  done
}

tests_and_memcheck() {  # tests_and_memcheck PREFIX TESTS MEMCHECK_TESTS: minidl_tests over TESTS, memcheck over
  # MEMCHECK_TESTS (logs PREFIX_tests and PREFIX_memcheck), and their summary lines
  run "$1_tests" 300 "$bin/minidl_tests" "$2"
  run "$1_memcheck" 200 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$bin/minidl_tests" "$3"
  grep -h "test cases\|assertions\|ERROR SUMMARY\|FAILED\|failed" "$out/$1_tests.log" "$out/$1_memcheck.log" | \
    head -20 | tee -a "$out/summary.log"
}

profile_summary() {  # profile_summary NAME TOP: MINIDL_PROFILE's table in $out/NAME.log summed per key and kernel,
  # in ms per step of its 20 profiled steps (as the callers' runs: --warmup 5 --steps 10); the TOP largest
  echo "$1: ms per step by key and kernel (20 profiled steps, a sync per call)" | tee -a "$out/summary.log"
  grep "minidl profile\] [a-z]" "$out/$1.log" | grep -v "kernel (key" | \
    awk '{k=$3" "$5; t[k]+=$(NF-3)} END {for (k in t) printf "%7.3f %s\n", t[k]/20, k}' | sort -rn | head -"$2" | \
    tee -a "$out/summary.log"
}

profile_nhwc() {  # profile_nhwc NAME [PRECISION]: the captcha step's profile (channels-last, under PRECISION: tf32
  # unless given), ms per step by kernel
  MINIDL_PROFILE=1 run "$1" 60 "$bin/captcha" bench --device cuda --batch 128 --memory-format nhwc \
    --precision "${2:-tf32}" --warmup 5 --steps 10
  profile_summary "$1" 16
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(info tests mnist mnist_hand bench memcheck)
nvidia-smi -L
for s in "${steps[@]}"; do
  case $s in
    info) run info 30 "$bin/minidl" info ;;
    tests) run tests 120 "$bin/minidl_tests" ;;
    mnist)
      run mnist_b64 110 "$bin/mnist" train --device cuda --epochs 3 --batch 64 --data "$data" --metrics "$out/mnist_b64.jsonl"
      run mnist_b256 50 "$bin/mnist" train --device cuda --epochs 3 --batch 256 --data "$data" --metrics "$out/mnist_b256.jsonl" ;;
    mnist_hand)
      MINIDL_KERNELS=$hand_written run mnist_hand_b64 60 "$bin/mnist" train --device cuda --epochs 1 --batch 64 --data "$data" --metrics "$out/mnist_hand_b64.jsonl"
      MINIDL_KERNELS=$hand_written run mnist_hand_b256 40 "$bin/mnist" train --device cuda --epochs 1 --batch 256 --data "$data" --metrics "$out/mnist_hand_b256.jsonl" ;;
    bench) run bench 300 "$bin/minidl" bench --device cuda --json "$out/bench.jsonl" --svg "$out/bench.svg" ;;
    memcheck) run memcheck 100 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "$bin/minidl_tests" "[cuda]" ;;
    captcha)
      run captcha_train 320 "$bin/captcha" train --device cuda --save "$out/captcha.ckpt" --metrics "$out/captcha.jsonl"
      run captcha_eval 60 "$bin/captcha" eval --model "$out/captcha.ckpt" --device cuda ;;
    captcha_lstm)  # captcha_break's recipe: the default run with an LSTM (docs/captcha.md)
      run captcha_lstm_train 400 "$bin/captcha" train --device cuda --rnn lstm --save "$out/captcha_lstm.ckpt" --metrics "$out/captcha_lstm.jsonl"
      run captcha_lstm_eval 60 "$bin/captcha" eval --model "$out/captcha_lstm.ckpt" --device cuda ;;
    captcha_bench)
      run captcha_bench 40 "$bin/captcha" bench --device cuda
      run captcha_bench_fused 40 "$bin/captcha" bench --device cuda --gru fused
      run captcha_bench_lstm 40 "$bin/captcha" bench --device cuda --rnn lstm
      MINIDL_TF32=1 run captcha_bench_tf32 40 "$bin/captcha" bench --device cuda ;;
    compare)  # `minidl compare`: MNIST on the GPU, then on this host's CPU (OMP_NUM_THREADS), docs/compare.md.
      # The CPU side: 3 epochs of --cpu-limit images. `mnist bench` on 16 cores measured 10.7 ms per step
      # of 64 (docs/results/README.md), ~6,000 images/s: 3 x 30,000 images is ~15 s at that rate, ~45 s at a
      # third of it, plus a test pass per epoch. COMPARE_CPU_LIMIT=0: all 60,000 (~2 min at a third).
      run compare 400 "$bin/minidl" compare --data "$data" --epochs 3 --cpu-limit "${COMPARE_CPU_LIMIT:-30000}" \
        --out "$out/compare"
      tail -n 30 "$out/compare.log" ;;
    torch) OUT=$out/torch BUILD=${BUILD:-build-cuda} run torch 200 bash scripts/compare-torch.sh ;;
    racecheck)
      rc=(compute-sanitizer --tool racecheck --report-api-errors no --error-exitcode 9)
      i=0
      for f in "[cuda][matmul]~[tf32]" "[tf32]" "[conv2d]" "[ctc]" "[pool],[batch_norm]" \
               "cuda elementwise*,cuda reductions*,cuda gather*" "cuda softmax*,cuda cross_entropy*,cuda sgd*,cuda adam*" \
               "[gru],[gru_sequence],[lstm],[lstm_sequence]" \
               "cuda memory*,cuda allocator*,cuda: DeviceGuard*,cuda: host*,cuda: copy*,cuda: rand*,cuda: dropout*,determinism*,MINIDL_CHECK_NUMERICS*"; do
        i=$((i + 1))
        run "racecheck_$i" 430 "${rc[@]}" "$bin/minidl_tests" "$f" &
      done
      wait
      run racecheck_gemm 300 "${rc[@]}" "$bin/minidl" bench --device cuda --op matmul --repeat 1 --budget 0.01 \
        --shape matmul:67x45x33 --shape matmul:130x70x150,ta --shape matmul:129x257x65,tb \
        --shape matmul:131x129x47,ta,tb,b2 --shape matmul:2048x1152x40 --shape matmul:64x128x600,tb ;;
    deterministic)
      for r in 1 2; do
        run "mnist_bench_plain_$r" 30 "$bin/mnist" bench --device cuda --steps 300
        run "mnist_bench_det_$r" 30 "$bin/mnist" bench --device cuda --steps 300 --deterministic
        run "captcha_bench_plain_$r" 40 "$bin/captcha" bench --device cuda --steps 60
        run "captcha_bench_det_$r" 40 "$bin/captcha" bench --device cuda --steps 60 --deterministic
      done ;;
    lined)
      fonts=(--font data/fonts/DejaVuSerif-Bold.ttf --font data/fonts/DejaVuSansMono-Bold.ttf)
      mkdir -p "$out/lined"
      for set in 101:10000:train 102:1000:val 103:1000:test; do
        IFS=: read -r seed count name <<<"$set"
        run "gen_$name" 60 "$bin/captcha" gen --style lined "${fonts[@]}" --width 160 --height 60 --count "$count" \
          --seed "$seed" --out "$out/lined/$name"
      done
      lined=(--device cuda --data "$out/lined/train" --val-data "$out/lined/val" --width 160 --height 60 --epochs 40)
      (run lined_before 420 "$bin/captcha" train "${lined[@]}" --no-augment --weight-decay 0 \
         --save-best "$out/before.ckpt" --metrics "$out/before.jsonl" &&
       run lined_before_eval 40 "$bin/captcha" eval --model "$out/before.ckpt" --data "$out/lined/test" --device cuda) &
      (run lined_after 420 "$bin/captcha" train "${lined[@]}" --save-best "$out/after.ckpt" --metrics "$out/after.jsonl" &&
       run lined_after_eval 40 "$bin/captcha" eval --model "$out/after.ckpt" --data "$out/lined/test" --device cuda) &
      wait ;;
    epochs) OUT=$out/epochs BUILD=${BUILD:-build-cuda} DATA=$data run epochs 300 bash scripts/compare-torch.sh \
              mnist_epoch_64 mnist_epoch_1024 mnist_fp32
            cat "$out/epochs/epochs.md" ;;
    recipe)
      for seed in 1 2 3 4 5 6 7 8 9 10; do
        run "recipe_$seed" 30 "$bin/mnist" train --device cuda --data "$data" --seed "$seed" --recipe fast \
          --target-accuracy 0.99 --metrics "$out/recipe_$seed.jsonl"
      done
      grep -h "reached\|not reached" "$out"/recipe_*.log ;;
    fusion)
      run fusion_tests 60 "$bin/minidl_tests" "*bias_relu*,*batch_norm_relu*,Sequential fuses*"
      run fusion_bench 90 "$bin/minidl" bench --device cuda --op bias_relu --op batch_norm_relu --op relu \
        --op relu_backward --op batch_norm
      for r in 1 2; do
        for f in 1 0; do
          MINIDL_FUSE_RELU=$f run "mnist_bench_fuse${f}_$r" 30 "$bin/mnist" bench --device cuda --steps 300
          MINIDL_FUSE_RELU=$f run "mnist_bench_b1024_fuse${f}_$r" 30 "$bin/mnist" bench --device cuda --batch 1024 --steps 100
          MINIDL_FUSE_RELU=$f run "captcha_bench_fuse${f}_$r" 40 "$bin/captcha" bench --device cuda --steps 60
        done
      done ;;
    conv_rule)
      run conv_rule_bench 120 "$bin/minidl" bench --device cuda --op conv2d --shape conv2d:64x1x28x28,32x1x3x3 \
        --shape conv2d:256x1x28x28,32x1x3x3 --shape conv2d:1024x1x28x28,32x1x3x3
      for r in 1 2; do
        for k in by_shape cudnn; do
          run "mnist_bench_conv_${k}_$r" 30 "$bin/mnist" bench --device cuda --steps 300 --kernel conv2d=$k
          run "mnist_bench_b1024_conv_${k}_$r" 30 "$bin/mnist" bench --device cuda --batch 1024 --steps 100 --kernel conv2d=$k
        done
      done ;;
    pack) run pack_bench 60 "$bin/minidl" bench --device cuda --op pack ;;
    tf32_diag)
      for t in 0 1; do
        MINIDL_TF32=$t run "tf32_ncu_$t" 150 ncu --clock-control none --metrics gpu__time_duration.sum \
          --print-summary per-kernel "$bin/mnist" bench --device cuda --warmup 5 --steps 10
      done
      for r in 1 2; do
        for t in 0 1; do
          MINIDL_TF32=$t run "tf32_bench_${t}_$r" 30 "$bin/mnist" bench --device cuda --steps 300
        done
      done ;;
    tf32_conv)
      MINIDL_TF32=1 run tf32_conv 200 "$bin/minidl" bench --device cuda --op conv2d \
        --shape conv2d:64x32x26x26,64x32x3x3 --shape conv2d:128x128x8x24,256x128x3x3,p1 ;;
    lab2)  # issue 25: `auto` against the default order (both examples, alternated twice), the per-shape
      # profile of an MNIST step, and its shapes benched through `minidl bench` (docs/adding-a-kernel.md)
      for r in 1 2; do
        run "mnist_bench_default_$r" 40 "$bin/mnist" bench --device cuda --steps 300
        run "mnist_bench_auto_$r" 90 "$bin/mnist" bench --device cuda --steps 300 --kernel '*=auto'
        run "captcha_bench_default_$r" 50 "$bin/captcha" bench --device cuda --steps 60
        run "captcha_bench_auto_$r" 120 "$bin/captcha" bench --device cuda --steps 60 --kernel '*=auto'
      done
      MINIDL_PROFILE=1 run mnist_profile 60 "$bin/mnist" bench --device cuda --steps 20 --warmup 3
      MINIDL_PROFILE=shapes MINIDL_PROFILE_FILE="$out/mnist_shapes.txt" run mnist_shapes 60 "$bin/mnist" bench \
        --device cuda --steps 5 --warmup 1
      # shellcheck disable=SC2046  # one --shape argument per line of the file
      run bench_mnist_shapes 150 "$bin/minidl" bench --device cuda --budget 0.05 $(cat "$out/mnist_shapes.txt")
      # baselines and sweeps on the GPU: the matmul cases twice (the second against the first), a size sweep
      run bench_matmul_old 120 "$bin/minidl" bench --device cuda --op matmul --json "$out/matmul_old.json"
      run bench_matmul_new 120 "$bin/minidl" bench --baseline "$out/matmul_old.json"
      run sweep_matmul 150 "$bin/minidl" bench --device cuda --op matmul --shape-sweep 128:2048:x2 --budget 0.05 \
        --csv "$out/matmul_sweep_cuda.csv" --svg "$out/matmul_sweep_cuda.svg" ;;
    issue26)  # issue 26: the [cuda] tests of the new paths and memcheck over them, channels-last against NCHW
      # and eager against the CUDA graph on both examples' steps, the BF16 rung against cuBLAS, the GPU exercises
      for fmt in nchw nhwc; do
        MINIDL_TF32=1 run "i26_captcha_tf32_${fmt}_eager" 40 "$bin/captcha" bench --device cuda --batch 128 --memory-format $fmt
        MINIDL_TF32=1 run "i26_captcha_tf32_${fmt}_graph" 40 "$bin/captcha" bench --device cuda --batch 128 --memory-format $fmt --cuda-graph
        run "i26_captcha_fp32_${fmt}_graph" 40 "$bin/captcha" bench --device cuda --batch 128 --memory-format $fmt --cuda-graph
        run "i26_captcha_bf16_${fmt}_graph" 40 "$bin/captcha" bench --device cuda --batch 128 --memory-format $fmt --cuda-graph --precision bf16
        for b in 64 1024; do
          run "i26_mnist_b${b}_${fmt}_graph" 30 "$bin/mnist" bench --device cuda --batch $b --memory-format $fmt --cuda-graph
        done
      done
      run i26_ladder_bf16 90 "$bin/minidl" bench --device cuda --op matmul --precision bf16 --kernel cublas --kernel bf16_wgmma \
        --shape matmul:4096x4096x4096 --shape matmul:4096x4096x4096,tb --shape matmul:2048x2048x2048
      run i26_ex6 30 "$bin/exercise_6_solution"
      run i26_ex6b 30 "$bin/exercise_6b_solution"
      run i26_ex6b_stub 30 "$bin/exercise_6b_stub"
      run i26_ex6_mutant 30 "$bin/exercise_6_mutant_matmul_smem_no_load_barrier" --no-bench
      run i26_tests_new 200 "$bin/minidl_tests" "[memory_format],[graph],[bf16],[cuda][batch_norm],[cuda][pool],[cuda][conv2d],[ctc]"
      run i26_memcheck 150 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "$bin/minidl_tests" \
        "[memory_format][cuda],[graph],[bf16]"
      step_means "$out"/i26_captcha_*.log "$out"/i26_mnist_*.log
      grep -h "test cases\|assertions\|ERROR SUMMARY" "$out"/i26_tests_new.log "$out"/i26_memcheck.log | tee -a "$out/summary.log"
      grep -h "bf16_wgmma\|cublas" "$out/i26_ladder_bf16.log" | tail -8 | tee -a "$out/summary.log" ;;
    profile26)  # issue 26, round 2: where the captcha step's GPU time goes, per kernel and per call shape
      # (MINIDL_PROFILE over the timed eager steps) in both memory formats under TF32, and every kernel launch
      # of the last step with its GPU time (Nsight Compute, CSV: the last step's rows are the last ones)
      for fmt in nchw nhwc; do
        MINIDL_TF32=1 MINIDL_PROFILE=1 run "p26_captcha_tf32_${fmt}" 60 "$bin/captcha" bench --device cuda --batch 128 \
          --memory-format $fmt --warmup 5 --steps 10
        MINIDL_TF32=1 run "p26_ncu_captcha_tf32_${fmt}" 200 ncu --clock-control none --metrics gpu__time_duration.sum \
          --csv "$bin/captcha" bench --device cuda --batch 128 --memory-format $fmt --warmup 3 --steps 1
      done
      MINIDL_PROFILE=1 run p26_mnist_b64 40 "$bin/mnist" bench --device cuda --batch 64 --warmup 20 --steps 100
      # the training loop against the bench: one default epoch, with all host threads rendering and with 8
      for t in 0 8; do
        run "p26_captcha_epoch_threads$t" 60 "$bin/captcha" train --device cuda --epochs 1 --threads $t
      done
      grep -h "images/s" "$out"/p26_captcha_epoch_*.log | tee -a "$out/summary.log" ;;
    formats26)  # issue 26, round 2: both memory formats on the captcha step (CUDA graph) under TF32, BF16 and FP32,
      # alternated twice, and the step's profile in NHWC under TF32 (MINIDL_PROFILE over the timed steps)
      for r in 1 2; do
        for fmt in nchw nhwc; do
          for prec in tf32 bf16 fp32; do
            run "f26_captcha_${prec}_${fmt}_$r" 40 "$bin/captcha" bench --device cuda --batch 128 --memory-format $fmt \
              --precision $prec --cuda-graph
          done
        done
      done
      step_means "$out"/f26_captcha_*.log
      MINIDL_PROFILE=1 run f26_profile_tf32_nhwc 60 "$bin/captcha" bench --device cuda --batch 128 --memory-format nhwc \
        --precision tf32 --warmup 5 --steps 10 ;;
    graph26)  # issue 26, round 2: conv2d through cuDNN's graph API (cuda/conv_cudnn_graph.cu) against the classic
      # API on the channels-last captcha step (CUDA graph), TF32 and BF16, alternated twice; the TF32 step's
      # profile per key and kernel (MINIDL_PROFILE over the timed steps, summed per step)
      classic="conv2d=cudnn,conv2d.backward_input=cudnn,conv2d.backward_weight=cudnn"
      for r in 1 2; do
        for prec in tf32 bf16; do
          run "g26_${prec}_graph_api_$r" 40 "$bin/captcha" bench --device cuda --batch 128 --memory-format nhwc \
            --precision $prec --cuda-graph
          run "g26_${prec}_classic_$r" 40 "$bin/captcha" bench --device cuda --batch 128 --memory-format nhwc \
            --precision $prec --cuda-graph --kernel "$classic"
        done
      done
      step_means "$out"/g26_*.log
      for k in graph_api classic; do
        extra=""; [ $k = classic ] && extra="--kernel $classic"
        # shellcheck disable=SC2086
        MINIDL_PROFILE=1 run "g26_profile_$k" 60 "$bin/captcha" bench --device cuda --batch 128 --memory-format nhwc \
          --precision tf32 --warmup 5 --steps 10 $extra
        profile_summary "g26_profile_$k" 14
      done ;;
    bf16acts26)  # issue 26, deliverable 3: bfloat16 activations between the captcha model's layers. The [bf16]
      # tests and memcheck over the CUDA ones; the captcha step (CUDA graph, channels-last, --precision bf16) with
      # --activations fp32 and bf16, alternated twice; `captcha train --precision bf16 --activations bf16` to the
      # saved model, then `captcha eval` (if bf16 measures faster, examples/flags.h's kActivationsDefault flips)
      run a26_tests 150 "$bin/minidl_tests" "[bf16],[graph]"
      run a26_memcheck 120 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
        "$bin/minidl_tests" "[cuda][bf16]"
      grep -h "test cases\|assertions\|ERROR SUMMARY\|SKIPPED" "$out"/a26_tests.log "$out"/a26_memcheck.log |
        tee -a "$out/summary.log"
      for r in 1 2; do
        for acts in fp32 bf16; do
          run "a26_bf16_${acts}_$r" 45 "$bin/captcha" bench --device cuda --batch 128 --memory-format nhwc \
            --precision bf16 --cuda-graph --activations $acts
        done
      done
      step_means "$out"/a26_bf16_*.log
      start=$SECONDS
      run a26_captcha_train 150 "$bin/captcha" train --device cuda --precision bf16 --activations bf16 \
        --save "$out/a26.ckpt"
      echo "a26: captcha train --precision bf16 --activations bf16: $((SECONDS - start)) s wall" |
        tee -a "$out/summary.log"
      grep -h "^captcha: memory\|^epoch\|final validation" "$out/a26_captcha_train.log" | tee -a "$out/summary.log"
      run a26_captcha_eval 60 "$bin/captcha" eval --model "$out/a26.ckpt" --device cuda
      grep -h "accuracy" "$out/a26_captcha_eval.log" | tee -a "$out/summary.log" ;;
    train26)  # issue 26's time-to-accuracy target: `captcha train` with its defaults (start to saved model,
      # wall time), then `captcha eval` on 10,000 fresh captchas
      start=$SECONDS
      run t26_captcha_train 200 "$bin/captcha" train --device cuda --save "$out/c26.ckpt"
      echo "t26: captcha train with its defaults: $((SECONDS - start)) s wall" | tee -a "$out/summary.log"
      grep -h "^epoch\|final validation" "$out/t26_captcha_train.log" | tee -a "$out/summary.log"
      run t26_captcha_eval 120 "$bin/captcha" eval --model "$out/c26.ckpt" --device cuda
      grep -h "accuracy" "$out/t26_captcha_eval.log" | tee -a "$out/summary.log" ;;
    bn26)  # issue 26, round 3: the batch-norm changes against the build before them ($OLD)
      old=${OLD:-build-old}/bin
      run b26_tests 200 "$bin/minidl_tests" "[batch_norm],[norm],[memory_format][cuda],[data]"
      run b26_memcheck 200 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
        "$bin/minidl_tests" "[cuda][batch_norm]"
      grep -h "test cases\|assertions\|ERROR SUMMARY" "$out"/b26_tests.log "$out"/b26_memcheck.log | tee -a "$out/summary.log"
      # the channels-last shapes are rows [N*H*W, C]: block 1 (128x64x192 rows of 32) and block 3 (128x16x48 of 128)
      for side in old new; do
        b=$bin; [ $side = old ] && b=$old
        run "b26_kernels_$side" 120 "$b/minidl" bench --device cuda --op batch_norm_relu --budget 0.2 \
          --shape batch_norm_relu:1572864x32 --shape batch_norm_relu.backward:1572864x32 \
          --shape batch_norm_relu:98304x128 --shape batch_norm_relu.backward:98304x128 \
          --shape batch_norm_relu:128x32x12288 --shape batch_norm_relu.backward:128x32x12288
        grep -h "v2_split" "$out/b26_kernels_$side.log" | sed "s/^/b26_kernels_$side: /" | tee -a "$out/summary.log"
      done
      ab_captcha_steps b26 "$old"
      ab_summary b26
      profile_nhwc b26_profile_new ;;
    quads26)  # issue 26, round 5: batch norm's rows four channels a load, against the build in $OLD
      old=${OLD:-build-old}/bin
      tests_and_memcheck q26 "[batch_norm],[norm],[memory_format][cuda]" "[cuda][batch_norm]"
      # channels-last rows [N*H*W, C]: blocks 1 (32 channels), 2 (64), 3 (128) and 4 (256) of the captcha model
      for side in old new; do
        b=$bin; [ $side = old ] && b=$old
        run "q26_kernels_$side" 120 "$b/minidl" bench --device cuda --op batch_norm_relu --kernel v2_split \
          --budget 0.2 --shape batch_norm_relu:1572864x32 --shape batch_norm_relu.backward:1572864x32 \
          --shape batch_norm_relu:393216x64 --shape batch_norm_relu.backward:393216x64 \
          --shape batch_norm_relu:98304x128 --shape batch_norm_relu.backward:98304x128 \
          --shape batch_norm_relu:24576x256 --shape batch_norm_relu.backward:24576x256
        grep -h "^batch_norm\|v2_split" "$out/q26_kernels_$side.log" | sed "s/^/q26_kernels_$side: /" | \
          tee -a "$out/summary.log"
      done
      ab_captcha_steps q26 "$old"
      ab_summary q26
      # the batch-norm kernels of 3 warm-up steps and 1 timed step under Nsight Compute (GPU time and DRAM
      # bytes, summed by kernel and divided by the 4 steps); QUADS_NCU=all profiles every kernel instead
      # (cuDNN's first-call searches then land in the warm-up's conv2d figures)
      ncu_metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
      only_bn=(--kernel-name regex:^bn_); [ "${QUADS_NCU:-bn}" = all ] && only_bn=()
      run q26_ncu_captcha 240 ncu --clock-control none --csv --print-units base --print-kernel-base function \
        "${only_bn[@]}" --metrics $ncu_metrics "$bin/captcha" bench --device cuda --batch 128 --memory-format nhwc \
        --precision tf32 --warmup 3 --steps 1
      echo "q26_ncu_captcha (TF32, channels-last, eager; per step over 4 steps):" | tee -a "$out/summary.log"
      python3 scripts/ncu_by_kernel.py "$out/q26_ncu_captcha.log" --steps 4 --top 30 | tee -a "$out/summary.log"
      if [ "${QUADS_NCU:-bn}" = all ]; then
        run q26_ncu_mnist 120 ncu --clock-control none --csv --print-units base --print-kernel-base function \
          --metrics $ncu_metrics "$bin/mnist" bench --device cuda --batch 64 --warmup 3 --steps 1
        echo "q26_ncu_mnist (batch 64, FP32, eager; per step over 4 steps):" | tee -a "$out/summary.log"
        python3 scripts/ncu_by_kernel.py "$out/q26_ncu_mnist.log" --steps 4 --top 30 | tee -a "$out/summary.log"
      fi ;;
    wgrad26)  # issue 26, round 4: the channels-last 3x3 weight gradient (cuda/conv_wgrad_nhwc_3x3.cu)
      tests_and_memcheck w26 "[conv2d],[memory_format]" "[cuda][conv2d][memory_format]"
      # the captcha model's 3x3 convolutions: blocks 1 to 5 at 64x192 ... 4x12 (the first has 3 input channels)
      shapes=""
      for spec in 128x3x64x192,32x3x3x3 128x32x64x192,32x32x3x3 128x32x32x96,64x32x3x3 128x64x32x96,64x64x3x3 128x64x16x48,128x64x3x3 \
               128x128x16x48,128x128x3x3 128x128x8x24,256x128x3x3 128x256x8x24,256x256x3x3 128x256x4x12,256x256x3x3; do
        shapes="$shapes --shape conv2d.backward_weight:$spec,s1p1,nhwc"
      done
      # shellcheck disable=SC2086
      MINIDL_TF32=1 run w26_kernels 240 "$bin/minidl" bench --device cuda --op conv2d.backward_weight --budget 0.2 \
        --kernel nhwc_3x3_tf32 --kernel nhwc_3x3_few_channels --kernel cudnn_graph_tf32 $shapes
      grep -h "^conv2d\|nhwc_3x3\|cudnn_graph_tf32\|WRONG" "$out/w26_kernels.log" | sed "s/^/w26_kernels: /" | \
        tee -a "$out/summary.log"
      # old: the same binary with cuDNN's graph API selected for the weight gradient (the previous default)
      for r in 1 2; do
        for prec in tf32 bf16; do
          for side in old new; do
            sel=(); [ $side = old ] && sel=(MINIDL_KERNELS=conv2d.backward_weight=cudnn_graph_tf32)
            run "w26_${prec}_${side}_$r" 40 env "${sel[@]}" "$bin/captcha" bench --device cuda --batch 128 \
              --memory-format nhwc --precision $prec --cuda-graph
          done
        done
      done
      ab_summary w26
      profile_nhwc w26_profile_new ;;
    rule26)  # issue 26, round 6: nhwc_3x3_tf32 at C x K <= 4096, against the build in $OLD
      old=${OLD:-build-old}/bin
      tests_and_memcheck r26 "[cuda][conv2d],[memory_format][cuda]" "[cuda][conv2d][memory_format]"
      MINIDL_TF32=1 run r26_kernels 120 "$bin/minidl" bench --device cuda --op conv2d.backward_weight --budget 0.2 \
        --kernel nhwc_3x3_tf32 --kernel cudnn_graph_tf32 --shape conv2d.backward_weight:128x64x32x96,64x64x3x3,s1p1,nhwc
      grep -h "^conv2d\|nhwc_3x3\|cudnn_graph_tf32\|WRONG" "$out/r26_kernels.log" | sed "s/^/r26_kernels: /" | \
        tee -a "$out/summary.log"
      ab_captcha_steps r26 "$old"
      ab_summary r26 ;;
    bnq26) tests_and_memcheck bnq26 "[batch_norm],[norm]" "[cuda][batch_norm]" ;;
    mwgrad26)  # issue 26: MNIST conv2's weight gradient, alone and in the batch-64 step
      run m26_kernels 120 "$bin/minidl" bench --device cuda --op conv2d.backward_weight --budget 0.2 \
        --shape conv2d.backward_weight:64x32x26x26,64x32x3x3,s1p0 --shape conv2d.backward_weight:64x32x26x26,64x32x3x3,s1p0,nhwc
      grep -h "^conv2d\|cudnn\|WRONG" "$out/m26_kernels.log" | sed "s/^/m26_kernels: /" | tee -a "$out/summary.log"
      MINIDL_PROFILE=1 run m26_profile 60 "$bin/mnist" bench --device cuda --batch 64 --warmup 5 --steps 10
      profile_summary m26_profile 12 ;;
    igemm26)  # issue 26: MNIST conv2 per stage, and the steps with our FP32 weight gradient
      conv2=64x32x26x26,64x32x3x3
      run i26_conv2 120 "$bin/minidl" bench --device cuda --op conv2d --budget 0.3 --shape conv2d:$conv2 \
        --shape conv2d.backward_input:$conv2 --shape conv2d.backward_weight:$conv2
      grep -h "^conv2d\|^  [a-z]" "$out/i26_conv2.log" | grep -v "ragged\|^  columns" | sed "s/^/i26_conv2: /" | \
        tee -a "$out/summary.log"
      for r in 1 2; do
        for side in default igemm; do
          sel=(); [ $side = igemm ] && sel=(--kernel conv2d.backward_weight=implicit_gemm)
          fp32_steps i26 "${side}_$r" "$bin" "${sel[@]}"
        done
      done
      step_means "$out"/i26_mnist_*.log "$out"/i26_captcha_*.log ;;
    fewout26)  # issue 26, round 7: the few-outputs weight-gradient rule against the build before it ($OLD)
      old=${OLD:-build-old}/bin
      tests_and_memcheck fewout26 "[cuda][conv2d]" "cuda conv2d by_shape*"
      ab_fp32_steps f26 "$old"
      ab_summary f26
      ab_captcha_steps f26c "$old"  # channels-last under TF32 and BF16: the rule should leave them alone
      ab_summary f26c ;;
    fusion26)  # issue 26, round 8: which cuDNN graph-API fusions build for the models' convolutions, and how fast
      # (tools/probes/cudnn_fusion.cpp: conv, conv + bias + ReLU at MNIST's shapes, conv + batch-norm statistics at
      # the captcha model's), against minidl's own bias_relu at MNIST's conv outputs
      probe=${PROBE:-$bin/cudnn_fusion_probe}
      run fu26_probe 240 "$probe"
      grep -h "^device\|^best\|does not finalize" "$out/fu26_probe.log" | sed "s/^/fu26_probe: /" | tee -a "$out/summary.log"
      run fu26_bias_relu 60 "$bin/minidl" bench --device cuda --op bias_relu --budget 0.2 --shape bias_relu:64x32x676 \
        --shape bias_relu:64x64x576 --shape bias_relu:1024x64x576
      grep -h "^bias_relu\|^  [a-z]" "$out/fu26_bias_relu.log" | sed "s/^/fu26_bias_relu: /" | tee -a "$out/summary.log" ;;
    fused26)  # issue 26, round 8: conv2d_bias_relu, fused against unfused in one binary
      tests_and_memcheck fused26 "[cuda][conv2d],[cuda][nn]" \
        "cuda conv2d_bias_relu*,cuda Sequential fuses*,[cuda][conv2d][memory_format]"
      mnist_convs=()
      for shape in 64x1x28x28,32x1x3x3,s1p0 64x32x26x26,64x32x3x3,s1p0 1024x1x28x28,32x1x3x3,s1p0 \
        1024x32x26x26,64x32x3x3,s1p0; do
        mnist_convs+=(--shape "conv2d_bias_relu:$shape" --shape "conv2d:$shape")
      done
      run fused26_kernels 120 "$bin/minidl" bench --device cuda --op conv2d_bias_relu --op conv2d --budget 0.2 \
        "${mnist_convs[@]}"
      grep -h "^conv2d\|^  [a-z]" "$out/fused26_kernels.log" | grep -v "ragged\|^  columns" | \
        sed "s/^/fused26_kernels: /" | tee -a "$out/summary.log"
      for r in 1 2; do
        for side in unfused fused; do
          sel=(); [ $side = unfused ] && sel=(--kernel conv2d=by_shape)
          for batch in 64 1024; do
            run "fused26_mnist_b${batch}_${side}_$r" 40 "$bin/mnist" bench --device cuda --batch $batch --cuda-graph \
              "${sel[@]}"
          done
        done
      done
      step_means "$out"/fused26_mnist_*.log
      run fused26_train 120 "$bin/mnist" train --device cuda --data "$data"
      grep -h "test accuracy\|accuracy" "$out/fused26_train.log" | tail -3 | sed "s/^/fused26_train: /" | \
        tee -a "$out/summary.log" ;;
    adam26)  # issue 26, round 11: Adam's and SGD's kernels with loads in flight, against the build before it ($OLD)
      old=${OLD:-build-old}/bin
      tests_and_memcheck adam26 "[optim]" "optimizer kernels*"
      mnist_params=32x1x3x3,32,64x32x3x3,64,128x9216,128,10x128,10
      for r in 1 2; do
        for side in old new; do
          b=$bin; [ $side = old ] && b=$old
          run "adam26_kernels_${side}_$r" 60 "$b/minidl" bench --device cuda --op adam_step --op sgd_step --budget 0.2 \
            --shape "adam_step:$mnist_params" --shape "sgd_step:$mnist_params"
          grep -h "^[a-z_]*_step\|^  [a-z]" "$out/adam26_kernels_${side}_$r.log" | grep -v "ragged\|^  columns" | \
            sed "s/^/adam26_kernels_${side}_$r: /" | tee -a "$out/summary.log"
        done
      done
      ab_fp32_steps a26 "$old"
      ab_eager_mnist a26 "$old"
      ab_summary a26
      run a26_train 120 "$bin/mnist" train --device cuda --data "$data"
      grep -h "final test accuracy" "$out/a26_train.log" | sed "s/^/a26_train: /" | tee -a "$out/summary.log" ;;
    tf32ncu)  # issue 26, round 11: tf32_wgmma_v3 against cuBLAS TF32 at 4096^3 (NN, NT) and 2048^3, each under ncu
      sizes=(--shape matmul:4096x4096x4096 --shape matmul:4096x4096x4096,tb --shape matmul:2048x2048x2048)
      MINIDL_TF32=1 run tf32ncu_bench 120 "$bin/minidl" bench --device cuda --op matmul "${sizes[@]}" \
        --kernel cublas --kernel tf32_wgmma_v3 --kernel bf16_wgmma
      grep -h "^matmul\|^  [a-z]" "$out/tf32ncu_bench.log" | grep -v "ragged\|^  columns" | \
        sed "s/^/tf32ncu_bench: /" | tee -a "$out/summary.log"
      for k in tf32_wgmma_v3 cublas; do
        filter=regex:tf32_wgmma_v3_kernel; [ $k = cublas ] && filter="regex:xmma|cutlass|gemm"
        MINIDL_TF32=1 run "tf32ncu_$k" 120 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis \
          --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats -k "$filter" \
          --launch-skip 3 --launch-count 1 "$bin/minidl" bench --device cuda --op matmul \
          --shape matmul:4096x4096x4096,tb --kernel "$k" --repeat 3
        grep -h "Duration\|Throughput\|L2 Hit\|Pipe\|Cluster\|Waves\|Achieved Occ\|  [a-z_0-9]*kernel\|Bank" \
          "$out/tf32ncu_$k.log" | head -40 | sed "s/^/tf32ncu_$k: /" >> "$out/summary.log"
      done ;;
    l2ncu)  # issue 26, round 12: where tf32_wgmma_v3's time goes beside cuBLAS TF32 at 4096^3 NT: L2 sectors by source,
      # instructions, sampled warp stalls (the second launch of each kernel: the bench's first is its warm-up)
      for k in tf32_wgmma_v3 cublas; do
        filter=regex:tf32_wgmma_v3_kernel; [ $k = cublas ] && filter=regex:sm90_xmma
        MINIDL_TF32=1 run "l2ncu_$k" 150 ncu --section SpeedOfLight --section WarpStateStats --section InstructionStats \
          --metrics lts__t_sectors_op_read.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum,smsp__inst_executed.sum,smsp__pcsamp_warps_issue_stalled_membar,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_long_scoreboard \
          -k "$filter" --launch-skip 1 --launch-count 1 "$bin/minidl" bench --device cuda --op matmul \
          --shape matmul:4096x4096x4096,tb --kernel "$k" --repeat 3
        grep -h "lts__\|smsp__\|Duration\|Compute (SM)" "$out/l2ncu_$k.log" | sed "s/^/l2ncu_$k: /" >> "$out/summary.log"
      done ;;
    prof26)  # issue 26, round 11: where the captcha step's time goes under BF16 and TF32 (channels-last)
      profile_nhwc prof26_bf16 bf16
      profile_nhwc prof26_tf32 tf32 ;;
    small26)  # issue 26, round 10: nchw_small_filter (MNIST conv1's weight gradient) against the build before it ($OLD)
      old=${OLD:-build-old}/bin
      tests_and_memcheck small26 "[cuda][conv2d]" "conv2d nchw_small_filter*,cuda conv2d by_shape*"
      small_shapes=()
      for shape in 64x1x28x28,32x1x3x3,s1p0 1024x1x28x28,32x1x3x3,s1p0 128x3x64x192,32x3x3x3,s1p1; do
        small_shapes+=(--shape "conv2d:$shape")
      done
      run small26_kernels 120 "$bin/minidl" bench --device cuda --op conv2d.backward_weight --budget 0.2 \
        "${small_shapes[@]}"
      grep -h "^conv2d\|^  [a-z]" "$out/small26_kernels.log" | grep -v "ragged\|^  columns" | \
        sed "s/^/small26_kernels: /" | tee -a "$out/summary.log"
      ab_fp32_steps s26 "$old"
      ab_eager_mnist s26 "$old"
      ab_summary s26
      run s26_train 120 "$bin/mnist" train --device cuda --data "$data"
      grep -h "final test accuracy" "$out/s26_train.log" | sed "s/^/s26_train: /" | tee -a "$out/summary.log" ;;
    pool26)  # issue 26, round 9: the pooled backward of Conv2d, ReLU, MaxPool2d against the build before it ($OLD)
      old=${OLD:-build-old}/bin
      tests_and_memcheck pool26 "[cuda][conv2d],[cuda][nn],[pool]" "cuda conv2d_bias_relu*"
      ab_fp32_steps p26 "$old"
      ab_eager_mnist p26 "$old"
      ab_summary p26
      run p26_train 120 "$bin/mnist" train --device cuda --data "$data"
      grep -h "final test accuracy" "$out/p26_train.log" | sed "s/^/p26_train: /" | tee -a "$out/summary.log" ;;
    acc26)  # issue 26, round 7: captcha training variants against the 99.7%-in-70-s target
      IFS=';' read -r -a variants <<<"${ACC26:---seed 2;--seed 3;--lr 1e-3 --dropout 0.25;--lr 3e-3}"
      i=0
      for v in "${variants[@]}"; do
        i=$((i + 1))
        start=$SECONDS
        # shellcheck disable=SC2086  # $v is a list of flags
        run "a26_train_$i" 120 "$bin/captcha" train --device cuda --save "$out/a26_$i.ckpt" $v
        echo "a26 variant $i ($v): $((SECONDS - start)) s wall to the saved model" | tee -a "$out/summary.log"
        grep -h "final validation" "$out/a26_train_$i.log" | tee -a "$out/summary.log"
        run "a26_eval_$i" 60 "$bin/captcha" eval --model "$out/a26_$i.ckpt" --device cuda
        grep -h "accuracy" "$out/a26_eval_$i.log" | sed "s/^/a26 variant $i: /" | tee -a "$out/summary.log"
        rm -f "$out/a26_$i.ckpt"
      done ;;
    graph)
      run graph_tests 90 "$bin/minidl_tests" "[graph],[dropout]"
      run graph_memcheck 150 compute-sanitizer --tool memcheck --report-api-errors no "$bin/minidl_tests" "[graph]"
      for r in 1 2; do
        for b in 64 256 1024; do
          run "graph_bench_eager_b${b}_$r" 40 "$bin/mnist" bench --device cuda --batch "$b" --steps 300
          run "graph_bench_graph_b${b}_$r" 40 "$bin/mnist" bench --device cuda --batch "$b" --steps 300 --cuda-graph
        done
      done
      grep "ms/step\|CUDA graphs" "$out"/graph_bench_*.log
      for seed in 1 2 3 4 5; do
        run "graph_recipe_eager_$seed" 30 "$bin/mnist" train --device cuda --data "$data" --seed "$seed" --recipe fast \
          --target-accuracy 0.99
        run "graph_recipe_graph_$seed" 30 "$bin/mnist" train --device cuda --data "$data" --seed "$seed" --recipe fast \
          --target-accuracy 0.99 --cuda-graph
      done
      grep -h "reached\|not reached" "$out"/graph_recipe_*.log
      for g in "" --cuda-graph; do
        run "graph_epoch_b64${g:+_graph}" 40 "$bin/mnist" train --device cuda --data "$data" --epochs 2 --batch 64 $g
      done ;;
    *) echo "unknown step $s" ;;
  esac
done
cat "$out/summary.log"
