#!/bin/bash
# Profile: SASS of the decode kernels, ncu stall breakdown and pipe use.
cd "$(dirname "$0")"
ls /usr/local/cuda/bin > $OUT/cuda-bin.txt 2>&1
OBJ=$(ls /usr/local/cuda/bin/cuobjdump 2>/dev/null)
if [ -n "$OBJ" ]; then
  $OBJ -sass lab > $OUT/lab.sass 2>&1
  grep -c . $OUT/lab.sass
fi
NCU=$(ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
M=smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
for s in short_scoreboard mio_throttle math_pipe_throttle barrier wait not_selected lg_throttle dispatch_stall no_instruction selected drain membar sleeping tex_throttle imc_miss branch_resolving; do
  M=$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
done
M=$M,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fp16.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__cycles_elapsed.avg,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed_op_shared_ld.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
timeout 200 $NCU --metrics $M -k regex:decode_kernel -c 2 ./lab profile > $OUT/ncu2.txt 2>&1
tail -3 $OUT/ncu2.txt
