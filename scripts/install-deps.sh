#!/usr/bin/env bash
# Installs the Debian packages minidl needs, non-interactively, when run as root; otherwise prints the
# command to run. The CUDA toolkit (nvcc, cuBLAS, cuDNN; NCCL where it ships with the toolkit) is not a
# Debian package here: when it is missing, minidl builds its CPU part only and `minidl info` says so.
set -euo pipefail

packages=(
  build-essential cmake pkg-config  # compiler and build
  libopenblas-dev                   # CPU GEMM (cblas_sgemm)
  zlib1g-dev                        # gzip'd MNIST files
  libstb-dev                        # stb_image, stb_image_write, stb_truetype (compiled into minidl)
  fonts-dejavu-core                 # TrueType fonts for the captcha generator (Sans; Serif, Sans Mono: --style lined)
  libcli11-dev                      # command-line parsing
  nlohmann-json3-dev                # JSON (metrics files)
  libcairo2-dev                     # PNG charts (`minidl plot -o curves.png`); optional: SVG works without it
  catch2                            # tests
  clang libomp-dev                  # `make test-clang` (clang's OpenMP runtime) and `make fuzz`
  libclang-rt-dev                   # clang's sanitizer and libFuzzer runtimes (`make fuzz`)
  openmpi-bin libopenmpi-dev        # minidl::dist: mpirun and MPI for multi-process training (--distributed)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} Debian packages are installed"
else
  if [ "$(id -u)" -eq 0 ]; then
    echo "deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    echo "deps: missing Debian packages: ${missing[*]}"
    echo "deps: install them with:  sudo apt-get install -y ${missing[*]}"
    exit 1
  fi
fi

if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "deps: CUDA toolkit found ($( (command -v nvcc || echo /usr/local/cuda/bin/nvcc) ))"
else
  echo "deps: no CUDA toolkit (nvcc) found: minidl will build without its GPU backend"
fi
