#!/usr/bin/env bash
# Build every preset's --harness program with nvcc and run it on this GPU (needs cuBLAS).
#   bash benchmarks/harness_check.sh [OUTDIR] [ARCH]
# Exits non-zero if any program fails to build, or reports a wrong result, on any shape.
set -uo pipefail
out=${1:-/tmp/gg-harness}; arch=${2:-sm_90}
mkdir -p "$out"
presets=$(python3 -c "from gemmgen.presets import names, runs_on; print(' '.join(n for n in names() if runs_on(n, '$arch')))")
build() {
  python3 -m gemmgen.cli emit --preset "$1" --arch "$3" --harness -o "$2/$1.cu" 2>/dev/null &&
  local target
  target=$(python3 -c "from gemmgen.presets import preset; print(preset('$1').target_arch('$3'))")   # sm_90a for wgmma
  local flags
  flags=$(python3 -c "from gemmgen.ptxas import arch_flags; print(' '.join(arch_flags('$target')))")
  nvcc -O3 $flags "$2/$1.cu" -lcublas -o "$2/$1" 2> "$2/$1.build.log" || echo "BUILD FAILED $1"
}
export -f build
printf '%s\n' $presets | xargs -P 16 -I{} bash -c "build {} $out $arch"
fail=0
for p in $presets; do
  for shape in "1000 1000 1000" "4097 4095 1023 0.5 3" "2048 2048 2048"; do
    if ! res=$("$out/$p" $shape 2>&1); then echo "FAIL $p $shape: $(echo "$res" | tail -2 | tr '\n' ' ')"; fail=1; fi
  done
  echo "$p: $(echo "$res" | grep -iE 'gflop|error' | tr '\n' ' ' | cut -c1-160)"
done
exit $fail
