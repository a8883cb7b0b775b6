#!/usr/bin/env bash
# One GPU-machine call (forty-seventh session): the host's copy of the group sizes
# (GemvBatch::grp_off_host: launches skip empty size ranges, the decode columns' compact layout),
# tested and measured. Carry any set (tests/gpu/prepare_carry.sh; g, qwen3moe MXFP4, ran in that
# session). Within ~MOEPACK_CALL_BUDGET_S (default 520 s):
#   1. builds the four gpu test binaries and bench_cuda_backend (pass_build_and_test.sh, tests skipped);
#   2. the host sizes' and the columns' tests first ($OUT/first.log): gpu_ops_test's *HostSizes*,
#      *PrefillColumns* and *Batching*, and the engine tests *PrefillColumns* / *PrefillTensorCores* of
#      the three fixture binaries (the engine passes its host copy);
#   3. bench_cuda_backend --prefill-host-sizes-only on the demo model ($OUT/bench-host.json; each part
#      also to stderr as it completes), summarised (host copy read against ignored);
#   4. with the time left, the whole of gpu_ops_test and gpu_cuda_backend_test ($OUT/ctest.log).
# (tests/gpu/prefill_columns_one_call.sh with this call's filter and benchmark mode.)
MOEPACK_OPS_FILTER='*HostSizes*:*PrefillColumns*:*Batching*' \
  MOEPACK_ENGINE_FILTER='*HostSizes*:*PrefillColumns*:*PrefillTensorCores*' MOEPACK_BENCH_MODE=--prefill-host-sizes-only \
  MOEPACK_BENCH_NAME=bench-host exec bash tests/gpu/prefill_columns_one_call.sh
