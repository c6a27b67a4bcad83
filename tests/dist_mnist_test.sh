#!/usr/bin/env bash
# tests/dist_mnist_test.sh MNIST_BINARY — `mnist train --distributed` over 2 processes (Open MPI, CPU)
# trains like one process with the same global batch and seed.
#
# Data: a small stand-in for MNIST written by tests/mnist_fixture.pl (371 training images: 5 batches of
# 64 and one of 51, split 25 + 26 between the ranks; 100 test images). Runs, each 2 epochs of --batch 64,
# seed 3, one OpenMP thread per process:
#   one    mnist train                          (plain, one process)
#   lone   mpirun -np 1 mnist train --distributed  must give the very same numbers as `one`
#   two    mpirun -np 2 mnist train --distributed  must give the same losses to float tolerance (relative
#          1e-5; only the order of the sums differs) and the same accuracies give or take one image (an
#          image the model is undecided about may tip either way with that order: 1/371 for training,
#          1/100 for test); its checkpoint, saved by rank 0, must evaluate to its own final test loss.
# Then the start-up checks: a world size that does not divide --batch, ranks given different flags, and a
# --save folder that does not exist (checked by rank 0 alone) must fail on every rank with a clear message.
# Last, a diverging job (--lr 1e38, 93 steps per epoch: the ranks agree at step 64): every rank must exit
# with status 3 (none left waiting in a collective), and the file saved earlier must stay as it was.
# Exit 77 (skipped) without mpirun (tests/mpirun.sh).
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do echo "--- $f"; tail -n 8 "$f"; done
  exit 1
}

bash "$here/mpirun.sh" 1 true >"$dir/probe.log" 2>&1
rc=$?
if [ $rc -eq 77 ]; then cat "$dir/probe.log"; exit 77; fi
[ $rc -eq 0 ] || fail "mpirun cannot start a process here: $(cat "$dir/probe.log")"

perl "$here/mnist_fixture.pl" "$dir/data" 371 100 || fail "writing the fixture"
flags=(train --data "$dir/data" --device cpu --epochs 2 --batch 64 --seed 3)

"$bin" "${flags[@]}" --metrics "$dir/one.jsonl" >"$dir/one.log" 2>&1 || fail "the one-process run"
bash "$here/mpirun.sh" 1 "$bin" "${flags[@]}" --distributed --metrics "$dir/lone.jsonl" >"$dir/lone.log" 2>&1 ||
  fail "the --distributed run of one process"
bash "$here/mpirun.sh" 2 "$bin" "${flags[@]}" --distributed --metrics "$dir/two.jsonl" --save "$dir/two.ckpt" \
  >"$dir/two.log" 2>&1 || fail "the 2-process run"
grep -q "distributed: 2 processes, mpi backend" "$dir/two.log" || fail "the 2-process run did not say it is one"

# compare A.jsonl B.jsonl RTOL IMAGES: per epoch, train/test loss within RTOL (relative), accuracies
# within IMAGES images (of 371 training and 100 test images).
compare() {
  perl -e '
    my ($a, $b, $rtol, $images) = @ARGV;
    my %count = (train_accuracy => 371, test_accuracy => 100);
    sub read_lines { open(my $f, "<", $_[0]) or die "$_[0]: $!\n"; my @r = <$f>; return @r; }
    my @x = read_lines($a); my @y = read_lines($b);
    die "$a has " . scalar(@x) . " epochs, $b " . scalar(@y) . "\n" unless @x == @y && @x == 2;
    for my $e (0 .. $#x) {
      for my $key (qw(train_loss test_loss train_accuracy test_accuracy)) {
        my ($u) = $x[$e] =~ /"$key":([-0-9.eE+]+)/; my ($v) = $y[$e] =~ /"$key":([-0-9.eE+]+)/;
        die "epoch " . ($e + 1) . ": no $key\n" unless defined $u && defined $v;
        my $tol = $key =~ /loss/ ? $rtol * abs($v) : $images / $count{$key} + 1e-9;
        printf "epoch %d %-15s %.9f  %.9f  (difference %.3g)\n", $e + 1, $key, $u, $v, abs($u - $v);
        die "epoch " . ($e + 1) . ": $key differs beyond the tolerance\n" if abs($u - $v) > $tol;
      }
    }' "$1" "$2" "$3" "$4"
}
echo "== one process (plain) vs mpirun -np 1 --distributed: identical"
compare "$dir/lone.jsonl" "$dir/one.jsonl" 0 0 || fail "one process with --distributed differs from without"
echo "== mpirun -np 2 --distributed vs one process, same global batch 64 and seed"
compare "$dir/two.jsonl" "$dir/one.jsonl" 1e-5 1 || fail "two processes do not train like one"

# The checkpoint rank 0 saved holds the trained weights: evaluating it gives the run's final test loss.
"$bin" eval --model "$dir/two.ckpt" --data "$dir/data" --device cpu >"$dir/eval.log" 2>&1 || fail "mnist eval"
saved=$(perl -ne 'print $1 if /^test loss: ([0-9.]+)/' "$dir/eval.log")
final=$(perl -ne '$l = $1 if /"test_loss":([-0-9.eE+]+)/; END { print $l }' "$dir/two.jsonl")
echo "== rank 0's checkpoint: test loss $saved (the run's last epoch: $final; eval prints 4 decimals)"
[ -n "$saved" ] && perl -e 'exit(abs($ARGV[0] - $ARGV[1]) <= 6e-5 ? 0 : 1)' "$saved" "$final" ||
  fail "the saved model's test loss $saved is not the run's $final"

echo "== start-up checks"
bash "$here/mpirun.sh" 3 "$bin" "${flags[@]}" --distributed >"$dir/three.log" 2>&1 &&
  fail "--batch 64 over 3 processes was accepted"
grep -q "cannot be split evenly over 3 processes" "$dir/three.log" || fail "no clear message for --batch 64 over 3"
bash "$here/mpirun.sh" 1 "$bin" "${flags[@]}" --distributed --lr 0.001 : -np 1 "$bin" "${flags[@]}" --distributed \
  >"$dir/mixed.log" 2>&1 && fail "ranks with different flags were accepted"
grep -q "started with different flags" "$dir/mixed.log" || fail "no clear message for different flags"
bash "$here/mpirun.sh" 2 "$bin" "${flags[@]}" --distributed --save "$dir/nope/m.ckpt" >"$dir/nosave.log" 2>&1 &&
  fail "a --save folder that does not exist was accepted"
[ "$(grep -c "the folder '$dir/nope' does not exist" "$dir/nosave.log")" -eq 1 ] ||
  fail "a bad --save path is not reported once (by rank 0)"
grep -q "^epoch 1/" "$dir/nosave.log" && fail "training started before the --save path was refused"

echo "== a diverging job (--lr 1e38): every rank stops with status 3; rank 0's file stays as it was"
cp -p "$dir/two.ckpt" "$dir/good.ckpt"
# Each rank runs under a shell that records its exit status; `timeout` turns a hang into a failure.
timeout 600 bash "$here/mpirun.sh" 2 bash -c '"$@"; s=$?; echo $s >"$0.$OMPI_COMM_WORLD_RANK"; exit $s' \
  "$dir/nan.status" "$bin" train --data "$dir/data" --device cpu --epochs 2 --batch 4 --seed 3 --schedule none \
  --lr 1e38 --distributed --save "$dir/two.ckpt" \
  >"$dir/nan.log" 2>&1
rc=$?
[ $rc -ne 124 ] || fail "the diverging job hung"
for r in 0 1; do
  [ "$(cat "$dir/nan.status.$r" 2>/dev/null)" = 3 ] || fail "rank $r of the diverging job exited with status" \
    "'$(cat "$dir/nan.status.$r" 2>/dev/null)', not 3 (mpirun: $rc)"
done
grep -q "training diverged on rank [01] of 2: the loss is nan at step [0-9]* (learning rate 1e+38)" "$dir/nan.log" ||
  fail "the message does not name the rank, the step, the loss and the learning rate"
cmp "$dir/two.ckpt" "$dir/good.ckpt" || fail "the diverging job changed the saved model"
ls "$dir" | grep -q "tmp-" && fail "temporary files were left: $(ls "$dir")"
echo "OK: 2 processes train like one (losses within 1e-5 relative, the same accuracies); checks refuse bad jobs;"
echo "    a diverging job stops on every rank with status 3"
