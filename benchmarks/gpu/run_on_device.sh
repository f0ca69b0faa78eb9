#!/usr/bin/env bash
# Run perfmodel's local-engine GPU sweeps on a machine with an NVIDIA GPU and write the
# measured datasets (canonical CSV) and a provenance file to $OUT (default ./gpu-out).
# Used on the project's lent H200 (see sample_runs/README.md); each sweep is capped in time
# (SIGTERM stops the runner cleanly after the point in flight, finished points are kept).
set -u
OUT=${OUT:-./gpu-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PERFMODEL_HOME=${PERFMODEL_HOME:-/tmp/perfmodel-home}
if [ -d .whl ]; then  # pydantic & co. carried as wheels where the machine has no registry
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
pm() { python3 -c 'import sys; from perfmodel.cli import main; sys.argv[0] = "perfmodel"; main()' "$@"; }
{
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "git_commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit,clocks.max.sm,clocks.max.mem --format=csv
  python3 -c 'import platform, torch, transformers; print("python", platform.python_version()); print("torch", torch.__version__, "cuda", torch.version.cuda); print("transformers", transformers.__version__); p = torch.cuda.get_device_properties(0); print("device", p.name, p.multi_processor_count, "SMs", round(p.total_memory / 2**30, 1), "GiB")'
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc)"
} > "$OUT/provenance.txt" 2>&1
cat "$OUT/provenance.txt"
pm datasets >/dev/null || exit 1
# PLANS: "plan.yaml:seconds ..." (each sweep stopped with SIGTERM after its seconds).
for spec in ${PLANS:-benchmarks/gpu/large.yaml:300 benchmarks/gpu/medium.yaml:110}; do
  plan=${spec%%:*}; secs=${spec##*:}; name=$(sed -n 's/^name: *//p' "$plan")
  timeout -s TERM "$secs" python3 -c 'import sys; from perfmodel.cli import main; sys.argv[0] = "perfmodel"; main()' \
    sweep "$plan" 2>&1 | tee "$OUT/$name.log"
  pm export "$name" -o "$OUT/$name.csv" || continue
  pm fit "$name" 2>&1 | tail -25  # text only: needs no plotly, which the GPU image lacks
done
pm sweeps
