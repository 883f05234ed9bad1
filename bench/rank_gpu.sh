#!/usr/bin/env bash
# RAP-RANK on one GPU, in one device call of at most 7 minutes with the machine's start: the ACS case (target
# under 10 s) and the whole extract from the parent start (target under 60 s on one H100).
#
#   OUT=/some/folder bash bench/rank_gpu.sh --data DIR
#   RANK_GPU_QUICK=1 OUT=/tmp/x bash bench/rank_gpu.sh --data DIR    # the same steps on the CPU, small sizes
#
# DIR holds FultonPUMS5full.csv (1.3 MB, /work/shared/data/cs208) and rhdf_bt_0solvar_extract.csv
# (4.0 MB, /work/shared/data/recon_replication/extract); default bench/data. Runs from a source tree
# (PYTHONPATH, no install) with torch (CUDA), numpy, pandas and pyyaml; not python-sat or highspy (the
# rounded runs are then not projected onto the release, as --no-project does), nor typer. Writes 5 files to
# $OUT: env.txt, acs.txt, acs/bench_rank.json, extract.txt, extract/bench_rank.json. Each step has its own
# timeout (20 + 70 + 270 s at most).
set -u
DATA=bench/data
while [ $# -gt 0 ]; do
  case "$1" in
    --data) DATA="$2"; shift 2 ;;
    *) echo "usage: OUT=DIR bash bench/rank_gpu.sh --data DIR" >&2; exit 2 ;;
  esac
done
: "${OUT:?set OUT to the output folder}"
case "$DATA" in /*) ;; *) DATA="$PWD/$DATA" ;; esac
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT"
PY="${PYTHON:-python} -u"
for f in FultonPUMS5full.csv rhdf_bt_0solvar_extract.csv; do
  [ -f "$DATA/$f" ] || { echo "missing $DATA/$f" | tee "$OUT/env.txt" >&2; exit 2; }
done
if [ -n "${RANK_GPU_QUICK:-}" ]; then   # a check of the script on a machine without a GPU
  DEVICE=cpu; ACS=(--quick); EXTRACT=(--quick --tracts 1 --blocks 40); LIMIT_ACS=300; LIMIT_EXTRACT=300
else
  DEVICE=cuda; ACS=(); EXTRACT=(); LIMIT_ACS=70; LIMIT_EXTRACT=270
fi
{ date -u; git log -1 --format='commit %h %s' 2>/dev/null; nvidia-smi 2>&1 | head -15
  timeout -k 5 20 $PY -c "import torch, sys; print(sys.version); print('torch', torch.__version__, 'cuda', torch.cuda.is_available() and torch.cuda.get_device_name(0))"
} > "$OUT/env.txt" 2>&1
# ACS: 7 PUMAs x 1,000 persons, 14 columns, all 2-way marginals, uniform start, 16 runs x 300 steps
timeout -k 5 "$LIMIT_ACS" $PY bench/rank.py --case acs --ways 2 --device "$DEVICE" --data "$DATA" "${ACS[@]}" \
  --out "$OUT/acs" > "$OUT/acs.txt" 2>&1
echo "exit $?" >> "$OUT/acs.txt"
# extract: 8,530 blocks, SF1 block tables, parent start, 16 runs x 300 steps (the time printed is the attack's;
# the blocks' preparation on the CPU is printed before it)
timeout -k 5 "$LIMIT_EXTRACT" $PY bench/rank.py --case extract --inits parent --device "$DEVICE" --data "$DATA" \
  --no-project "${EXTRACT[@]}" --out "$OUT/extract" > "$OUT/extract.txt" 2>&1
echo "exit $?" >> "$OUT/extract.txt"
tail -n 20 "$OUT"/env.txt "$OUT"/acs.txt "$OUT"/extract.txt
