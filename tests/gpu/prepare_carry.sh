#!/usr/bin/env bash
# Fills .device-carry/shared/fixtures with one subset of the oracle fixtures for a GPU-machine
# call (at most 64 MiB travel per call: working tree + .device-deps + .device-carry).
#   tests/gpu/prepare_carry.sh a   deepseek2 Q4_K_M + llama-moe Q4_K_M       (~31 MiB)
#   tests/gpu/prepare_carry.sh b   deepseek2 Q2_K (3 shards) + qwen3moe MXFP4 (~32 MiB)
#   tests/gpu/prepare_carry.sh c   deepseek4 Q2_K + MXFP4_MOE                 (~24 MiB)
#   tests/gpu/prepare_carry.sh d   kimi-linear Q2_K + Q4_K_M                  (~28 MiB)
#   tests/gpu/prepare_carry.sh e   deepseek4 Q2_K + kimi-linear Q2_K          (~20 MiB)
#   tests/gpu/prepare_carry.sh f   deepseek4 Q4_K_M + Q2_K                    (~22 MiB)
#   tests/gpu/prepare_carry.sh g   qwen3moe MXFP4                             (~20 MiB)
#   tests/gpu/prepare_carry.sh h   deepseek2 Q2_K (3 shards) + deepseek4 MXFP4_MOE (~27 MiB)
#   tests/gpu/prepare_carry.sh i   qwen3moe MXFP4 + kimi-linear Q2_K          (~30 MiB)
#   tests/gpu/prepare_carry.sh j   deepseek2 Q4_K_M + deepseek4 Q4_K_M        (~28 MiB)
#   tests/gpu/prepare_carry.sh k   kimi-linear Q4_K_M + deepseek4 Q2_K        (~25 MiB)
#   tests/gpu/prepare_carry.sh l   llama-moe Q4_K_M + kimi-linear Q2_K        (~28 MiB)
#   tests/gpu/prepare_carry.sh m   deepseek2 Q2_K (3 shards) + kimi-linear Q2_K (Q3_K rows of 512:
#                                  the tensor-core Q3_K decode end to end)
#   tests/gpu/prepare_carry.sh n   llama-moe Q4_K_M + deepseek2 Q2_K (3 shards) (Q5_K attention
#                                  outputs, Q3_K downs: the twenty-eighth and twenty-ninth
#                                  passes' engine tests in one call; the demo's Q6_K downs travel
#                                  with the tree)
#   tests/gpu/prepare_carry.sh o   deepseek2 Q2_K (3 shards) + deepseek4 Q2_K + kimi-linear Q2_K
#                                  (~31 MiB: every Q3_K engine test and both arch tier tests)
#   tests/gpu/prepare_carry.sh p   deepseek2 Q4_K_M + deepseek4 MXFP4_MOE     (~30 MiB)
#   tests/gpu/prepare_carry.sh q   deepseek4 Q4_K_M + kimi-linear Q4_K_M      (~29 MiB: the two
#                                  arch tier tests on Q4_K_M)
#   tests/gpu/prepare_carry.sh r   qwen3moe MXFP4 + deepseek4 Q2_K            (~28 MiB)
#   tests/gpu/prepare_carry.sh s   deepseek2 Q2_K (3 shards) alone          (~12.5 MiB: beside the
#                                  prebuilt binaries, tests/gpu/sm120_limits_one_call.sh)
#   tests/gpu/prepare_carry.sh t   qwen3moe MXFP4 + deepseek4 MXFP4_MOE       (~34 MiB: every MXFP4 engine
#                                  fixture beside a prebuilt gpu_ops_test alone, the demo model moved out
#                                  of the tree for the call; fifty-eighth session)
#   tests/gpu/prepare_carry.sh none                                            (0 MiB)
# Only the GGUF files and their f32-dequant/native references travel. Run from the repository
# root; ../shared is read in place. Prints the size of what will travel.
set -eu
set_name="${1:?usage: prepare_carry.sh a|b|c|d|e|f|g|h|i|j|k|l|m|n|o|p|q|r|s|t|none}"
src="${MOEPACK_SHARED_DIR:-../shared}/fixtures"
dst=.device-carry/shared/fixtures
rm -rf .device-carry/shared
mkdir -p "$dst"
copy() {  # copy FILE_UNDER_FIXTURES...
  for f in "$@"; do
    mkdir -p "$dst/$(dirname "$f")"
    cp "$src/$f" "$dst/$f"
  done
}
refs() {  # refs PREFIX: the reference JSON of a model
  copy "$1.f32-dequant.ref.json"
}
case "$set_name" in
  a)
    copy deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf llama-moe-tiny/llama-moe-tiny-Q4_K_M.gguf
    refs deepseek2-tiny/deepseek2-tiny-Q4_K_M
    refs llama-moe-tiny/llama-moe-tiny-Q4_K_M
    ;;
  b)
    copy deepseek2-tiny/deepseek2-tiny-Q2_K-0000{1,2,3}-of-00003.gguf qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf
    refs deepseek2-tiny/deepseek2-tiny-Q2_K
    refs qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE
    ;;
  c)
    copy deepseek4-tiny/deepseek4-tiny-Q2_K.gguf deepseek4-tiny/deepseek4-tiny-MXFP4_MOE.gguf
    copy deepseek4-tiny/ref/deepseek4-tiny-Q2_K.f32-dequant.json deepseek4-tiny/ref/deepseek4-tiny-MXFP4_MOE.f32-dequant.json
    ;;
  d)
    copy kimi-linear-tiny/kimi-linear-tiny-Q2_K.gguf kimi-linear-tiny/kimi-linear-tiny-Q4_K_M.gguf
    copy kimi-linear-tiny/ref/kimi-linear-tiny-Q2_K.f32-dequant.json kimi-linear-tiny/ref/kimi-linear-tiny-Q4_K_M.f32-dequant.json
    ;;
  e)
    copy deepseek4-tiny/deepseek4-tiny-Q2_K.gguf kimi-linear-tiny/kimi-linear-tiny-Q2_K.gguf
    copy deepseek4-tiny/ref/deepseek4-tiny-Q2_K.f32-dequant.json kimi-linear-tiny/ref/kimi-linear-tiny-Q2_K.f32-dequant.json
    ;;
  f)
    copy deepseek4-tiny/deepseek4-tiny-Q4_K_M.gguf deepseek4-tiny/deepseek4-tiny-Q2_K.gguf
    copy deepseek4-tiny/ref/deepseek4-tiny-Q4_K_M.f32-dequant.json deepseek4-tiny/ref/deepseek4-tiny-Q2_K.f32-dequant.json
    ;;
  g)
    copy qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf
    refs qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE
    ;;
  h)
    copy deepseek2-tiny/deepseek2-tiny-Q2_K-0000{1,2,3}-of-00003.gguf deepseek4-tiny/deepseek4-tiny-MXFP4_MOE.gguf
    refs deepseek2-tiny/deepseek2-tiny-Q2_K
    copy deepseek4-tiny/ref/deepseek4-tiny-MXFP4_MOE.f32-dequant.json
    ;;
  i)
    copy qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf kimi-linear-tiny/kimi-linear-tiny-Q2_K.gguf
    refs qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE
    copy kimi-linear-tiny/ref/kimi-linear-tiny-Q2_K.f32-dequant.json
    ;;
  j)
    copy deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf deepseek4-tiny/deepseek4-tiny-Q4_K_M.gguf
    refs deepseek2-tiny/deepseek2-tiny-Q4_K_M
    copy deepseek4-tiny/ref/deepseek4-tiny-Q4_K_M.f32-dequant.json
    ;;
  k)
    copy kimi-linear-tiny/kimi-linear-tiny-Q4_K_M.gguf deepseek4-tiny/deepseek4-tiny-Q2_K.gguf
    copy kimi-linear-tiny/ref/kimi-linear-tiny-Q4_K_M.f32-dequant.json deepseek4-tiny/ref/deepseek4-tiny-Q2_K.f32-dequant.json
    ;;
  l)
    copy llama-moe-tiny/llama-moe-tiny-Q4_K_M.gguf kimi-linear-tiny/kimi-linear-tiny-Q2_K.gguf
    refs llama-moe-tiny/llama-moe-tiny-Q4_K_M
    copy kimi-linear-tiny/ref/kimi-linear-tiny-Q2_K.f32-dequant.json
    ;;
  m)
    copy deepseek2-tiny/deepseek2-tiny-Q2_K-0000{1,2,3}-of-00003.gguf kimi-linear-tiny/kimi-linear-tiny-Q2_K.gguf
    refs deepseek2-tiny/deepseek2-tiny-Q2_K
    copy kimi-linear-tiny/ref/kimi-linear-tiny-Q2_K.f32-dequant.json
    ;;
  n)
    copy llama-moe-tiny/llama-moe-tiny-Q4_K_M.gguf deepseek2-tiny/deepseek2-tiny-Q2_K-0000{1,2,3}-of-00003.gguf
    refs llama-moe-tiny/llama-moe-tiny-Q4_K_M
    refs deepseek2-tiny/deepseek2-tiny-Q2_K
    ;;
  o)
    copy deepseek2-tiny/deepseek2-tiny-Q2_K-0000{1,2,3}-of-00003.gguf
    copy deepseek4-tiny/deepseek4-tiny-Q2_K.gguf kimi-linear-tiny/kimi-linear-tiny-Q2_K.gguf
    refs deepseek2-tiny/deepseek2-tiny-Q2_K
    copy deepseek4-tiny/ref/deepseek4-tiny-Q2_K.f32-dequant.json kimi-linear-tiny/ref/kimi-linear-tiny-Q2_K.f32-dequant.json
    ;;
  p)
    copy deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf deepseek4-tiny/deepseek4-tiny-MXFP4_MOE.gguf
    refs deepseek2-tiny/deepseek2-tiny-Q4_K_M
    copy deepseek4-tiny/ref/deepseek4-tiny-MXFP4_MOE.f32-dequant.json
    ;;
  q)
    copy deepseek4-tiny/deepseek4-tiny-Q4_K_M.gguf kimi-linear-tiny/kimi-linear-tiny-Q4_K_M.gguf
    copy deepseek4-tiny/ref/deepseek4-tiny-Q4_K_M.f32-dequant.json kimi-linear-tiny/ref/kimi-linear-tiny-Q4_K_M.f32-dequant.json
    ;;
  r)
    copy qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf deepseek4-tiny/deepseek4-tiny-Q2_K.gguf
    refs qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE
    copy deepseek4-tiny/ref/deepseek4-tiny-Q2_K.f32-dequant.json
    ;;
  s)
    copy deepseek2-tiny/deepseek2-tiny-Q2_K-0000{1,2,3}-of-00003.gguf
    refs deepseek2-tiny/deepseek2-tiny-Q2_K
    ;;
  t)
    copy qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf deepseek4-tiny/deepseek4-tiny-MXFP4_MOE.gguf
    refs qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE
    copy deepseek4-tiny/ref/deepseek4-tiny-MXFP4_MOE.f32-dequant.json
    ;;
  none) ;;
  *) echo "unknown set $set_name (a to t, or none)" >&2; exit 2 ;;
esac
# The prompt texts of every carried deepseek4 / kimi-linear model (the Session tests read them).
for fam in deepseek4-tiny kimi-linear-tiny; do
  [ -d "$dst/$fam" ] && cp -r "$src/$fam/prompts" "$dst/$fam/prompts"
done
carry=$(du -sm .device-carry | cut -f1)
deps=$(du -sm .device-deps 2>/dev/null | cut -f1 || echo 0)
tree=$(git ls-files -co --exclude-standard -z | du -cm --files0-from=- 2>/dev/null | tail -1 | cut -f1)
echo "carry set $set_name: .device-carry ${carry} MiB + .device-deps ${deps:-0} MiB + working tree ${tree} MiB" \
  "= $((carry + ${deps:-0} + tree)) MiB (limit 64)"
