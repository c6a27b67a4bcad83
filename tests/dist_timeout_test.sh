#!/usr/bin/env bash
# tests/dist_timeout_test.sh MNIST_BINARY TESTS_BINARY — a rank that stops answering ends the job
# (MINIDL_DIST_TIMEOUT, dist/process.h) instead of leaving the others blocked in a collective forever.
#
#   stop_rank R   `mpirun -np 2 mnist train --distributed` (CPU, a small fixture) with MINIDL_DIST_TIMEOUT=5:
#                 once training runs, rank R's process gets SIGSTOP. The other rank must time out in its
#                 next collective, name rank R as silent, and end the job: mpirun exits with status 5
#                 within a bounded time (the stopped process is killed too, nothing is left behind).
#                 Done for R = 1 and R = 0 (rank 0 is the one that prints and saves).
#   skipped       `mpirun -np 2 minidl_tests "mpi timeout: rank 1 skips a barrier*"` (a hidden case of
#                 tests/test_dist.cpp) with MINIDL_DIST_TIMEOUT=1: rank 1 skips a barrier and sleeps; rank 0
#                 must name rank 1 as silent, with exit status 5.
#   mismatched    "mpi timeout: ranks in collectives that do not match*" (MINIDL_DIST_TIMEOUT 5 s on rank 0,
#                 60 s on rank 1, so that rank 0 is the one that times out): rank 0 waits in a barrier, rank 1
#                 in max_over_ranks: both answer each other, so no rank is silent, and the message says so.
#   bad value     MINIDL_DIST_TIMEOUT=5abc: refused on every rank, naming the variable, before training.
# Each job runs under `timeout 120`: on the unfixed code it fails (status 124) instead of hanging.
# Exit 77 (skipped) without mpirun (tests/mpirun.sh).
set -u
mnist=$1
tests=$2
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
stopped=""
# A stopped process left behind would hold its resources forever: let it go on (then it is killed).
trap '[ -n "$stopped" ] && kill -CONT $stopped 2>/dev/null; rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do [ -e "$f" ] && { echo "--- $f"; tail -n 12 "$f"; }; done
  exit 1
}

bash "$here/mpirun.sh" 1 true >"$dir/probe.log" 2>&1
rc=$?
if [ $rc -eq 77 ]; then cat "$dir/probe.log"; exit 77; fi
[ $rc -eq 0 ] || fail "mpirun cannot start a process here: $(cat "$dir/probe.log")"

# Waits (at most 120 s) until file $1 holds a line matching $2.
wait_for() {
  for _ in $(seq 600); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  fail "no '$2' in $1 after 120 s"
}

# The pid of rank $2 among the children of process $1 (Open MPI puts the rank in each one's environment).
rank_pid() {
  for pid in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

perl "$here/mnist_fixture.pl" "$dir/data" 640 40 || fail "writing the fixture"
flags=(train --data "$dir/data" --device cpu --epochs 50 --batch 32 --seed 3)  # 20 steps per epoch: minutes

# A value that is not a number of seconds is refused on every rank before any of them waits.
MINIDL_DIST_TIMEOUT=5abc timeout 120 bash "$here/mpirun.sh" 2 -x MINIDL_DIST_TIMEOUT "$mnist" "${flags[@]}" \
  --distributed >"$dir/bad.log" 2>&1
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "MINIDL_DIST_TIMEOUT=5abc: mpirun exited with status $rc"
[ "$(grep -c "MINIDL_DIST_TIMEOUT='5abc' is not valid: not a number of seconds; expected 0 or off" \
  "$dir/bad.log")" -eq 2 ] || fail "MINIDL_DIST_TIMEOUT=5abc: not refused by both ranks with a clear message"
grep -q "^epoch 1/" "$dir/bad.log" && fail "MINIDL_DIST_TIMEOUT=5abc: training started"
echo "OK: MINIDL_DIST_TIMEOUT=5abc refused by every rank (status $rc)"

for r in 1 0; do
  log="$dir/stop$r.log"
  timeout 120 bash "$here/mpirun.sh" 2 -x MINIDL_DIST_TIMEOUT=5 "$mnist" "${flags[@]}" --distributed >"$log" 2>&1 &
  timeout_pid=$!
  wait_for "$log" "epoch 1/50 "  # a step has run: every rank is inside the training loop
  mpirun_pid=$(pgrep -P $timeout_pid) || fail "no mpirun under timeout"
  stopped=$(rank_pid "$mpirun_pid" "$r") || fail "no process of rank $r under mpirun $mpirun_pid"
  kill -STOP "$stopped"
  start=$(date +%s)
  wait $timeout_pid
  rc=$?
  took=$(($(date +%s) - start))
  [ $rc -ne 124 ] || fail "rank $r stopped with SIGSTOP: the job was still running after 120 s (it hangs)"
  [ $rc -eq 5 ] || fail "rank $r stopped with SIGSTOP: mpirun exited with status $rc (wanted 5)"
  # The timeout (5 s) plus the time given to the silent rank to answer (5 s), and slack for a busy machine.
  [ $took -le 40 ] || fail "rank $r stopped with SIGSTOP: the job took $took s to end (the timeout is 5 s)"
  other=$((1 - r))
  grep -q "minidl dist: rank $other of 2 (host [^)]*) waited 5 s (MINIDL_DIST_TIMEOUT) in collective #[0-9]* ([a-z_]*); silent rank(s), no answer within 5 s: $r (host [^)]*)\. Stopping the job (exit status 5)\." "$log" ||
    fail "rank $r stopped with SIGSTOP: no message from rank $other naming rank $r as silent"
  # Gone, or a zombie (dead; mpirun, its parent, has exited and a container's init may not reap it). A
  # killed process may still be running its exit for a moment on a busy machine: give it 10 s to finish.
  for _ in $(seq 50); do
    state=$(ps -o stat= -p "$stopped")
    [ -z "$state" ] || [ "${state#Z}" != "$state" ] && break
    sleep 0.2
  done
  [ -z "$state" ] || [ "${state#Z}" != "$state" ] || fail "the stopped rank $r (pid $stopped, state $state) outlived the job"
  stopped=""
  echo "OK: rank $r stopped with SIGSTOP: rank $other named it and the job ended with status 5 after $took s"
done

# mpi_case NAME LOG [T0 T1]: the hidden test case NAME on two ranks (two app contexts of one mpirun, rank 0
# first) with MINIDL_DIST_TIMEOUT=T0 on rank 0 and T1 on rank 1 (1 s on both by default); sets rc.
mpi_case() {
  timeout 120 bash "$here/mpirun.sh" 1 -x MINIDL_DIST_TIMEOUT="${3:-1}" "$tests" "$1" --use-colour no \
    : -np 1 -x MINIDL_DIST_TIMEOUT="${4:-1}" "$tests" "$1" --use-colour no >"$2" 2>&1
  rc=$?
  [ $rc -ne 124 ] || fail "$1: the job was still running after 120 s (it hangs)"
  [ $rc -eq 5 ] || fail "$1: mpirun exited with status $rc (wanted 5)"
}

mpi_case "mpi timeout: rank 1 skips a barrier*" "$dir/skipped.log"
grep -q "minidl dist: rank 0 of 2 (host [^)]*) waited 1 s (MINIDL_DIST_TIMEOUT) in collective #[0-9]* (barrier); silent rank(s), no answer within 1 s: 1 (host [^)]*)\. Stopping the job (exit status 5)\." "$dir/skipped.log" ||
  fail "a skipped barrier: rank 0 did not name rank 1 as silent"
echo "OK: rank 1 skipped a barrier: rank 0 named it (status 5)"

# Both ranks wait, so either could time out first; the one that does ends the job, and only rank 0's
# message is checked. So rank 0 waits 5 s and rank 1 60 s: rank 0 always speaks first, and 5 s (not 1)
# leaves room for the two processes to start seconds apart on a loaded machine (with 1 s on both, rank 1
# was sometimes named silent while still starting, or ended the job first).
mpi_case "mpi timeout: ranks in collectives that do not match*" "$dir/mismatch.log" 5 60
grep -q "minidl dist: rank 0 of 2 (host [^)]*) waited 5 s (MINIDL_DIST_TIMEOUT) in collective #\([0-9]*\) (barrier); no rank is silent: rank 1 answered from collective #\1: the ranks wait in collectives that do not match" "$dir/mismatch.log" ||
  fail "mismatched collectives: rank 0 did not say that every rank answered"
echo "OK: ranks in different collectives: no rank named silent, the message says they do not match (status 5)"
echo "PASS"
