# Shared shell helpers for scripts/*.sh (sourced, not run).

# ensure_apt PKG...: installs the Debian packages that are not installed yet.
ensure_apt() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing apt packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# export_ggml_cpu_features: build the in-process llama.cpp (crate llama-cpp-sys-2) for the CPU of the machine
# that builds it. Its build script turns GGML_NATIVE off and enables only what Rust's own target names, but it
# forwards every GGML_* variable to CMake and reruns when one of them changes. So every feature is set, ON or
# OFF, from /proc/cpuinfo: a target/ reused on another CPU sees other values and is rebuilt, never run with
# instructions that CPU lacks (ggml's default without these would assume AVX2 everywhere). x86-64 only.
export_ggml_cpu_features() {
  # The build script compiles llama.cpp as CMake's RelWithDebInfo (-O2) in a dev build, Release (-O3) in a
  # release one. Measured in paired rounds against llama-bench (Release), prompt processing read 0.78-0.81x
  # at -O2 and 0.94-1.00x at -O3 (evidence/bench/README.md): the tests' and the runner's one build gets -O3.
  export LLAMA_LIB_PROFILE=Release
  # ...except libllama, common and cpp-httplib, at -O1: ggml's kernels keep -O3 (xtask/llama-tools/optimisation.cmake
  # says why; the build script forwards every CMAKE_* variable to CMake).
  export CMAKE_PROJECT_INCLUDE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/xtask/llama-tools/optimisation.cmake"
  # The build script re-runs when a GGML_* variable changes, not when that file does: its hash in one (which
  # CMake ignores) makes an edit to the file recompile llama.cpp instead of leaving the old objects in place.
  GGML_FORGE_OPTIMISATION="$(sha256sum "$CMAKE_PROJECT_INCLUDE" | cut -c1-16)"
  export GGML_FORGE_OPTIMISATION
  [ "$(uname -m)" = x86_64 ] && [ -r /proc/cpuinfo ] || return 0
  local flags
  flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  # ON when the CPU has every flag named (ggml's AVX512 option compiles with -mavx512{f,cd,vl,dq,bw}).
  # Names as the kernel spells them: `avx512vbmi` (no underscore), but `avx512_vnni` and `avx512_bf16`.
  _ggml_has() {
    local f
    for f in "$@"; do case "$flags" in *" $f "*) ;; *) echo OFF; return ;; esac; done
    echo ON
  }
  local avx512="avx512f avx512cd avx512vl avx512dq avx512bw"
  export GGML_SSE42="$(_ggml_has sse4_2)" GGML_AVX="$(_ggml_has avx)" GGML_AVX2="$(_ggml_has avx2)" \
    GGML_FMA="$(_ggml_has fma)" GGML_F16C="$(_ggml_has f16c)" GGML_BMI2="$(_ggml_has bmi2)" \
    GGML_AVX_VNNI="$(_ggml_has avx_vnni)" GGML_AVX512="$(_ggml_has $avx512)" \
    GGML_AVX512_VBMI="$(_ggml_has $avx512 avx512vbmi)" GGML_AVX512_VNNI="$(_ggml_has $avx512 avx512_vnni)" \
    GGML_AVX512_BF16="$(_ggml_has $avx512 avx512_bf16)"
  unset -f _ggml_has
}
