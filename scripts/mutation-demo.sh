#!/bin/bash
# The mirror-free kill matrix end to end on the CPU (docs/history/mutation.md "Measured: bundle replay on the
# CPU"): three of our GPU-traced examples (examples/execute_bugs/{layernorm,softmax,center_rows}_correct:
# ref.py, new.py, bundle/) as substrates; mutants by `dirigo mutate` (NVRTC); every program launched by
# replaying the bundle through the concrete interpreter on the first INPUTS inputs of the pool (5
# KernelBench draws + 6 hardened; fuzz left out to save CPU); the kill-witness search on the survivors
# (the first SEARCH candidates of the plan, then dirigo's own witness at WITNESS_BUDGET s per survivor);
# KernelBench's own check run as a harness on every mutant; scores and suites; last the report
# (docs/mutation.md "Report"), written between its markers in REPORT with the picture in SVG.
# Usage from the repo root: bash scripts/mutation-demo.sh   (DB, WORK, INPUTS, REPORT, SVG may be set)
set -eu
DB=${DB:-.cache/mutation/demo.sqlite}; WORK=${WORK:-.cache/mutation/demo}; INPUTS=${INPUTS:-11}
export PYTHONPATH=$PWD/python DIRIGO_BIN=${DIRIGO_BIN:-$PWD/build/dirigo}
rm -rf "$DB" "$WORK"; mkdir -p "$WORK/substrates"
for e in layernorm_correct softmax_correct center_rows_correct; do
  mkdir -p "$WORK/substrates/$e"
  cp examples/execute_bugs/$e/ref.py examples/execute_bugs/$e/new.py "$WORK/substrates/$e/"
  cp -r examples/execute_bugs/$e/bundle "$WORK/substrates/$e/bundle"
done
t0=$(date +%s)
python3 -m dirigo.bundle_km prep "$DB" "$WORK" "$WORK"/substrates/*
python3 -m dirigo.bundle_km run "$DB" "$WORK" --device cpu --inputs "$INPUTS"
t1=$(date +%s)
python3 -m dirigo.witness_inputs search "$DB" "$WORK" --device cpu --tol 1e-2 --per-mutant ${SEARCH:-8} \
  --witness-budget ${WITNESS_BUDGET:-2}
t2=$(date +%s)
"$DIRIGO_BIN" score --store "$DB" --work "$WORK" --protocol dirigo.harness:kernelbench_check -q
t3=$(date +%s)
"$DIRIGO_BIN" suite --store "$DB" --budget 1..3 -q
echo "wall seconds: prep+matrix $((t1 - t0)), search $((t2 - t1)), harness $((t3 - t2))"
sqlite3 "$DB" "SELECT source, COUNT(*), SUM(status = 'ok'), SUM(status = 'crash'), SUM(status = 'timeout'),
  ROUND(AVG(ms), 1) FROM runs GROUP BY source"
python3 -m dirigo.mutation_report "$DB" --dirigo "$DIRIGO_BIN" --out "${REPORT:-docs/mutation.md}" \
  --svg "${SVG:-docs/mutation-misses.svg}"
