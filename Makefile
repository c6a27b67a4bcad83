# minidl — a thin front for CMake. Every target works on a fresh Debian machine.
#
#   make          release build into build/ (binaries in build/bin/)
#   make deps     install the Debian packages minidl needs (as root; otherwise prints the command)
#   make test     build, then run every test through ctest, and say why any test was skipped
#   make data     put the MNIST files in data/mnist (copied from a local copy, else downloaded)
#   make mnist    the main job: deps, build, data, then train the MNIST CNN and print test accuracy
#   make captcha  deps, build, then train the captcha recognizer (GPU-sized: ~2 min on an H200) and evaluate it
#   make compare  deps, build, data, then `minidl compare`: the MNIST CNN on the GPU and on the CPU, side by side
#                 (COMPARE_FLAGS="--epochs 1 --cpu-limit 6000" for a short CPU side; output in runs/compare)
#   make exercise N=3   build and run the checker of the course's exercise 3 on your file (docs/course/README.md);
#                       ARGS="--no-bench" skips the timing
#   make install  build, then install the library, headers, programs, CMake package and pkg-config file
#                 under PREFIX (default /usr/local): `make install PREFIX=$HOME/.local`
#   make clean    remove build/
# Checking builds, each in its own folder, CPU only:
#   make test-asan   the whole test suite built with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan)
#   make test-tsan   the tests that use several threads, built with ThreadSanitizer (build-tsan)
#   make test-clang  the whole test suite built with clang (build-clang)
#   make fuzz        the libFuzzer targets of fuzz/ (clang, build-fuzz), each run FUZZ_SECONDS (default 60)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 60
# A sanitizer report fails the test that triggered it. The sanitizer build is -O1 with asserts on: half
# the compile time of -O2, and still fast enough to run every test. It is built without MPI: Open MPI 4.1
# never frees what MPI_Init allocates, much of it from plugins it loaded with dlopen, which LeakSanitizer's
# fast unwinder cannot name to suppress; dist/ is still built and tested there, over one process
# (dist/single_process.cpp), and the mpirun tests skip. make test and make test-clang run them with MPI.
SANITIZER_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

.PHONY: all configure deps test data mnist captcha compare exercise clean test-asan test-tsan test-clang fuzz fuzz-corpus

all: configure
	cmake --build $(BUILD) -j $(JOBS)

# CMAKE_FLAGS go to CMake whenever they are given (`make CMAKE_FLAGS=-DMINIDL_WITH_CUDA=OFF`), for a new
# build folder or an existing one; CMake remembers them (its cache), so a later plain `make` keeps them.
configure:
	@if [ ! -f $(BUILD)/CMakeCache.txt ]; then \
	  cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS); \
	elif [ -n "$(strip $(CMAKE_FLAGS))" ]; then \
	  cmake -S . -B $(BUILD) $(CMAKE_FLAGS); \
	fi

deps:
	bash scripts/install-deps.sh

test: all
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS); status=$$?; \
	  bash scripts/skipped-tests.sh $(BUILD)/Testing/Temporary/LastTest.log; exit $$status

PREFIX ?= /usr/local
.PHONY: install
install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

data:
	bash scripts/get-mnist.sh data/mnist

mnist: deps all data
	$(BUILD)/bin/mnist train --data data/mnist $(MNIST_FLAGS)

captcha: deps all
	$(BUILD)/bin/captcha train --save captcha.ckpt $(CAPTCHA_FLAGS)
	$(BUILD)/bin/captcha eval --model captcha.ckpt

compare: deps all data
	$(BUILD)/bin/minidl compare $(COMPARE_FLAGS)

# The exercise's number without leading zeros (N=03 and N=3 are the same exercise; N=4b is exercise 4b).
EXERCISE = $(shell echo "$(N)" | sed 's/^0*//')

# A GPU exercise is built only where CMake found nvcc: in another build, say so (exit 2). A checker's exit 77
# means skipped (no usable GPU; it says why): make reports it and exits 0, since the file compiled.
exercise: configure
	@if [ -z "$(EXERCISE)" ] || ! ls -d exercises/*-*/ | grep -qE "^exercises/0*$(EXERCISE)-"; then \
	  echo "usage: make exercise N=<number>   (the exercises: exercises/README.md)"; ls -d exercises/[0-9]*; exit 2; fi
	@[ -f $(BUILD)/exercises/exercise_numbers.txt ] || cmake -S . -B $(BUILD) > /dev/null
	@if ! grep -qx "$(EXERCISE)" $(BUILD)/exercises/exercise_numbers.txt; then \
	  echo "make exercise: exercise $(EXERCISE) needs the CUDA build (nvcc at configure time); $(BUILD) was"; \
	  echo "configured without CUDA (docs/course/00-setup.md: the CUDA build)."; exit 2; fi
	cmake --build $(BUILD) -j $(JOBS) --target exercise_$(EXERCISE)
	@$(BUILD)/bin/exercise_$(EXERCISE) $(ARGS); status=$$?; \
	  if [ $$status -eq 77 ]; then \
	    echo "make exercise: exercise $(EXERCISE) SKIPPED (exit 77: no usable GPU, as said above); your file compiled."; \
	    exit 0; fi; \
	  exit $$status

test-asan:
	@test -f build-asan/CMakeCache.txt || cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DMINIDL_WITH_CUDA=OFF -DMINIDL_WITH_MPI=OFF -DMINIDL_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && $(SANITIZER_ENV) ctest --output-on-failure -j $(JOBS); status=$$?; \
	  bash ../scripts/skipped-tests.sh Testing/Temporary/LastTest.log; exit $$status

# ThreadSanitizer (build-tsan, CPU only, without MPI): the tests that run minidl's code on several
# threads at once. Neither OpenMP's nor OpenBLAS's threads are instrumented (their synchronisation would
# be reported as races), so both run one thread.
TSAN_TESTS = [threads],[data],[dispatch]
test-tsan:
	@test -f build-tsan/CMakeCache.txt || cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DMINIDL_WITH_CUDA=OFF -DMINIDL_WITH_MPI=OFF -DMINIDL_TSAN=ON
	cmake --build build-tsan -j $(JOBS) --target minidl_tests
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  build-tsan/bin/minidl_tests "$(TSAN_TESTS)"

test-clang:
	@test -f build-clang/CMakeCache.txt || CC=clang CXX=clang++ cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Release \
	  -DMINIDL_WITH_CUDA=OFF
	cmake --build build-clang -j $(JOBS)
	cd build-clang && ctest --output-on-failure -j $(JOBS); status=$$?; \
	  bash ../scripts/skipped-tests.sh Testing/Temporary/LastTest.log; exit $$status

fuzz:
	JOBS=$(JOBS) bash fuzz/run.sh $(FUZZ_SECONDS)

fuzz-corpus:
	JOBS=$(JOBS) bash fuzz/run.sh --corpus

clean:
	rm -rf $(BUILD)
