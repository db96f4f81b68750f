# What torchrun.sbatch and accelerate.sbatch share, sourced in the repository root (where the job was submitted).
# Sets nproc, port, out, rdzv_id and resume, prints where the job runs and writes, and defines run_step, which runs
# the job step and requeues the job when the step was stopped after saving progress.

gpus=${SLURM_GPUS_ON_NODE:-0}
if [[ "$gpus" =~ ^[0-9]+$ ]] && ((gpus > 0)); then
  nproc=$gpus  # one process per GPU
else
  nproc=${NPROC_PER_NODE:-1}  # CPU nodes: sbatch --export=ALL,NPROC_PER_NODE=N
fi
# a port free on this node (the batch script runs on the job's first node, the rendezvous host), per start
port=${MASTER_PORT:-$(python -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')}
# named from the job's name and ID: a new job never writes into another job's run. A reinstalled cluster reuses
# IDs; then the rung refuses the old run's checkpoints in one line instead of continuing them.
out=out/${SLURM_JOB_NAME}-${SLURM_JOB_ID}
# one rendezvous id per start: torchrun restarts within this start continue their own checkpoints (whatever
# TORCHELASTIC_RESTART_COUNT says on the healthy nodes), and nothing else's
rdzv_id=${SLURM_JOB_ID}-$(date +%s)
resume=()
if ((${SLURM_RESTART_COUNT:-0} > 0)); then
  resume=(--resume auto)  # a requeued job continues its own run from its newest checkpoint
fi
mkdir -p out
echo "$(date -Is) job ${SLURM_JOB_ID} start $((${SLURM_RESTART_COUNT:-0} + 1)) on ${SLURM_JOB_NODELIST:-$head_node}:" \
  "${SLURM_NNODES} node(s) x ${nproc} process(es), rendezvous ${head_node}:${port}, output ${out}/"

newest() { { ls -d "$out"/checkpoints/step-* 2>/dev/null || true; } | sort | tail -n 1; }

# The time limit is near (USR1, from --signal=B:USR1@seconds, to this script alone): SIGTERM to the job's steps,
# as `scancel --signal=TERM` sends it, reaches torchrun and the rung, which checkpoints; the job then requeues
# itself below. (SIGTERM to srun itself would make it kill the step at once, without a checkpoint.) Preemption
# and `scancel --full` signal every process of the job: the rung gets its own SIGTERM, this script only waits.
trap 'scancel --signal=TERM "$SLURM_JOB_ID" || true' USR1
trap ':' TERM  # keep waiting for the step, which checkpoints

run_step() {
  local before rc started
  before=$(newest)
  started=$(date +%s)
  "$@" &
  step_pid=$!
  while :; do  # a trapped signal interrupts `wait`: wait again until the step has really ended
    if wait "$step_pid"; then rc=0; else rc=$?; fi
    kill -0 "$step_pid" 2>/dev/null || break
  done
  if ((rc != 0)) && [[ -f "$out/metrics.json" ]] && (($(stat -c %Y "$out/metrics.json") >= started)); then
    echo "$(date -Is) job ${SLURM_JOB_ID}: the run finished (metrics.json written); exit ${rc} came after it"
    return 0  # a signal that landed after the last write (torchrun's own exit 1 on SIGTERM)
  fi
  # stopped, not finished, and a newer checkpoint than at the start: a signal (or a crash after progress)
  if ((rc != 0)) && [[ ! -f "$out/metrics.json" && "$(newest)" > "$before" ]]; then
    if ((${SLURM_RESTART_COUNT:-0} < ${MAX_REQUEUES:-20})); then
      echo "$(date -Is) job ${SLURM_JOB_ID} stopped at $(basename "$(newest)") (exit ${rc}): requeued, it resumes there"
      scontrol requeue "$SLURM_JOB_ID" || true  # preemption and `scontrol requeue` have already requeued it
      exit 0
    fi
    echo "$(date -Is) job ${SLURM_JOB_ID} stopped ${MAX_REQUEUES:-20} times: not requeued again (MAX_REQUEUES)"
  fi
  return "$rc"
}
