#!/usr/bin/env bash
# RAP-RANK on one GPU: the ACS case (target under 10 s) and the extract (target under 60 s on one H100).
#
#   OUT=/some/folder bash bench/rank_gpu.sh --data DIR
#
# DIR holds FultonPUMS5full.csv (1.3 MB, /work/shared/data/cs208) and rhdf_bt_0solvar_extract.csv
# (4.0 MB, /work/shared/data/recon_replication/extract); default bench/data. Needs torch (CUDA), numpy,
# pandas, pyyaml; not python-sat or highspy (without them the rounded runs are not projected onto the
# release, as --no-project does). Writes to $OUT: env.txt, compare_old.txt, acs.txt, extract.txt and each
# case's bench_rank.json. Each step has its own timeout; the whole stays under 8 minutes.
set -u
DATA=bench/data
while [ $# -gt 0 ]; do
  case "$1" in
    --data) DATA="$2"; shift 2 ;;
    *) echo "usage: OUT=DIR bash bench/rank_gpu.sh --data DIR" >&2; exit 2 ;;
  esac
done
: "${OUT:?set OUT to the output folder}"
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
PY="${PYTHON:-python} -u"
for f in FultonPUMS5full.csv rhdf_bt_0solvar_extract.csv; do
  [ -f "$DATA/$f" ] || { echo "missing $DATA/$f" | tee "$OUT/error.txt" >&2; exit 2; }
done
{ nvidia-smi; $PY -c "import torch, sys; print(sys.version); print(torch.__version__, torch.cuda.get_device_name(0))"; } > "$OUT/env.txt" 2>&1
# the earlier answer form against the new, side by side on the GPU (reduced ACS case)
timeout 60 $PY bench/rank.py --case acs --ways 2 --device cuda --data "$DATA" --compare-old --quick \
  --out "$OUT/compare" > "$OUT/compare_old.txt" 2>&1
# ACS: 7 PUMAs x 1,000 persons, 14 columns, all 2-way marginals, uniform start, 16 runs x 300 steps
timeout 100 $PY bench/rank.py --case acs --ways 2 --device cuda --data "$DATA" --out "$OUT/acs" > "$OUT/acs.txt" 2>&1
# extract: 8,530 blocks, SF1 block tables, parent and uniform starts, 16 runs x 300 steps
timeout 300 $PY bench/rank.py --case extract --device cuda --data "$DATA" --no-project --out "$OUT/extract" \
  > "$OUT/extract.txt" 2>&1
tail -n 25 "$OUT"/compare_old.txt "$OUT"/acs.txt "$OUT"/extract.txt
