# minidl — a thin front for CMake. Every target works on a fresh Debian machine.
#
#   make          release build into build/ (binaries in build/bin/)
#   make deps     install the Debian packages minidl needs (as root; otherwise prints the command)
#   make test     build, then run every test through ctest
#   make data     put the MNIST files in data/mnist (copied from a local copy, else downloaded)
#   make mnist    the main job: deps, build, data, then train the MNIST CNN and print test accuracy
#   make captcha  deps, build, then train the captcha recognizer (GPU-sized: ~4 min on an H200) and evaluate it
#   make compare  deps, build, data, then `minidl compare`: the MNIST CNN on the GPU and on the CPU, side by side
#                 (COMPARE_FLAGS="--epochs 1 --cpu-limit 6000" for a short CPU side; output in runs/compare)
#   make clean    remove build/
# Checking builds, each in its own folder, CPU only:
#   make test-asan   the whole test suite built with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan)
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
SANITIZER_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

.PHONY: all configure deps test data mnist captcha compare clean test-asan test-clang fuzz fuzz-corpus

all: configure
	cmake --build $(BUILD) -j $(JOBS)

configure:
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

deps:
	bash scripts/install-deps.sh

test: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

data:
	bash scripts/get-mnist.sh data/mnist

mnist: deps all data
	$(BUILD)/bin/mnist train --data data/mnist $(MNIST_FLAGS)

captcha: deps all
	$(BUILD)/bin/captcha train --save captcha.ckpt $(CAPTCHA_FLAGS)
	$(BUILD)/bin/captcha eval --model captcha.ckpt

compare: deps all data
	$(BUILD)/bin/minidl compare $(COMPARE_FLAGS)

test-asan:
	@test -f build-asan/CMakeCache.txt || cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DMINIDL_WITH_CUDA=OFF -DMINIDL_WITH_MPI=OFF -DMINIDL_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && $(SANITIZER_ENV) ctest --output-on-failure -j $(JOBS)

test-clang:
	@test -f build-clang/CMakeCache.txt || CC=clang CXX=clang++ cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Release \
	  -DMINIDL_WITH_CUDA=OFF
	cmake --build build-clang -j $(JOBS)
	cd build-clang && ctest --output-on-failure -j $(JOBS)

fuzz:
	JOBS=$(JOBS) bash fuzz/run.sh $(FUZZ_SECONDS)

fuzz-corpus:
	JOBS=$(JOBS) bash fuzz/run.sh --corpus

clean:
	rm -rf $(BUILD)
