#!/bin/bash
# One batched GPU call: runs every queued job script scripts/gpu/<name>.sh (queued by
# .cache/gpu-queue/<name>.ready) in parallel, each with its own output folder and a time limit, and
# copies each job's single <name>.tar.gz into OUT. Usage: bash scripts/gpu/call.sh OUT SECONDS [names...]
set -u
OUT=$1; LIMIT=$2; shift 2
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
names=("$@")
[ ${#names[@]} -eq 0 ] && names=($(ls .cache/gpu-queue/*.ready 2>/dev/null | xargs -n1 basename | sed 's/\.ready$//'))
echo "jobs: ${names[*]}"
nvidia-smi -L; nproc
for n in "${names[@]}"; do
  mkdir -p /tmp/gpuout/$n
  ( start=$(date +%s); timeout -k 10 $LIMIT bash scripts/gpu/$n.sh /tmp/gpuout/$n >/tmp/gpuout/$n.log 2>&1
    echo "$n: exit $? after $(( $(date +%s) - start )) s" ) &
done
wait
for n in "${names[@]}"; do
  if [ -f /tmp/gpuout/$n/$n.tar.gz ]; then cp /tmp/gpuout/$n/$n.tar.gz "$OUT/"
  else tar czf "$OUT/$n.tar.gz" -C /tmp/gpuout $n.log; fi   # no result: bring its log back instead
  echo "== $n"; tail -5 /tmp/gpuout/$n.log
done
ls -la "$OUT"
