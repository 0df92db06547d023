#!/usr/bin/env bash
# The one entry point of the GPU-host measurement sessions, run from the repository root
# on a machine with an NVIDIA GPU (the datasets in .device_data/, wheels the image lacks
# in .whl/; see docs/development.md, "Benchmarks"):
#   bash benchmarks/gpu_host/run.sh STEP [args]      e.g. run.sh check, run.sh trust
# STEP is one of the scripts beside this one; each says what it measures and where its
# results go ($OUT). Without a STEP: the list.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
step=${1:-}
if [ -z "$step" ] || [ ! -f "$here/$step.sh" ] || [ "$step" = env ] || [ "$step" = run ]; then
  echo "usage: bash benchmarks/gpu_host/run.sh STEP   (STEP: one of the following)"
  for f in "$here"/*.sh; do
    name=$(basename "$f" .sh)
    case "$name" in env|run) continue ;; esac
    printf '  %-13s %s\n' "$name" "$(sed -n '2s/^# //p' "$f")"
  done
  [ -z "$step" ] && exit 0 || exit 2
fi
shift
exec bash "$here/$step.sh" "$@"
