#!/usr/bin/env bash
# Build llama.cpp's `llama-server` (that target only) from the llama.cpp tree vendored in the llama-cpp-python
# source distribution, into a cache directory. A no-op when the binary is already there.
#
#   tools/build_llama_server.sh            # prints the binary's path on the last line
#
# Environment:
#   PERFMODEL_LLAMA_CPP_DIR   cache directory (default ~/.cache/perfmodel/llama.cpp/<version>)
#   PERFMODEL_LLAMA_JOBS      parallel compile jobs (default: nproc)
#   PERFMODEL_LLAMA_NATIVE    ON|OFF: -march=native (default OFF: the binary does not depend on the build host)
#   PYTHON                    interpreter whose pip downloads the sdist (default .venv/bin/python, else python3)
#
# Layout of the cache directory:
#   bin/llama-server          the server (static: no libllama/libggml .so beside it)
#   llama.cpp/                the vendored source tree (convert_hf_to_gguf.py and gguf-py/ are used by the tests)
#   build-seconds             wall time of the compile, for the record
#
# The tests read the version from the next line: keep it a plain assignment.
LLAMA_CPP_PYTHON_VERSION=0.3.36
set -euo pipefail

cache="${PERFMODEL_LLAMA_CPP_DIR:-$HOME/.cache/perfmodel/llama.cpp/$LLAMA_CPP_PYTHON_VERSION}"
jobs="${PERFMODEL_LLAMA_JOBS:-$(nproc)}"
native="${PERFMODEL_LLAMA_NATIVE:-OFF}"
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$here/.venv/bin/python" ]; then PYTHON="$here/.venv/bin/python"; else PYTHON=python3; fi
fi

if [ -x "$cache/bin/llama-server" ] && [ -f "$cache/llama.cpp/convert_hf_to_gguf.py" ]; then
  echo "llama-server already built: $cache/bin/llama-server" >&2
  echo "$cache/bin/llama-server"
  exit 0
fi

for tool in cmake c++; do
  command -v "$tool" >/dev/null 2>&1 || { echo "build_llama_server.sh: '$tool' is required" >&2; exit 2; }
done
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi

mkdir -p "$cache"
work="$cache/work"
rm -rf "$work"
mkdir -p "$work"

if [ ! -f "$cache/llama.cpp/convert_hf_to_gguf.py" ]; then
  echo "downloading llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION (sdist)" >&2
  "$PYTHON" -m pip download -q --no-binary :all: --no-deps -d "$work" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  tar xzf "$work/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz" -C "$work"
  rm -rf "$cache/llama.cpp"
  mv "$work/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp" "$cache/llama.cpp"
fi

# Only what llama-server needs: no tests/examples/app, no web UI (neither npm nor the HF-bucket download: the
# machine is offline and the sweeps never use it), no OpenSSL (plain HTTP on 127.0.0.1), static libraries.
# LLAMA_CURL is deprecated in this llama.cpp (a warning only), so it is not passed.
start_s=$(date +%s)
cmake -S "$cache/llama.cpp" -B "$work/build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE="$native" \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_OPENSSL=OFF >&2
cmake --build "$work/build" --target llama-server -j "$jobs" >&2
end_s=$(date +%s)

mkdir -p "$cache/bin"
cp "$work/build/bin/llama-server" "$cache/bin/llama-server.tmp"
mv "$cache/bin/llama-server.tmp" "$cache/bin/llama-server"   # atomic: a half-copied binary never looks built
echo "$((end_s - start_s))" > "$cache/build-seconds"
rm -rf "$work"
echo "llama-server built in $((end_s - start_s)) s (jobs=$jobs, GGML_NATIVE=$native): $cache/bin/llama-server" >&2
echo "$cache/bin/llama-server"
