# Sourced by the device scripts: isal from .whl/ where the image lacks it, the source
# tree on PYTHONPATH, the datasets in .device_data/, $OUT, and the GPU's name in $OUT.
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=src:${PYTHONPATH:-} PYTHONUNBUFFERED=1
export WEBRANK_DATASETS=${WEBRANK_DATASETS:-$PWD/.device_data}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt"
