#!/usr/bin/env bash
# m2v review on real MLX Vulkan forks: recall against the hand-made ground truth (review/groundtruth/*.json),
# accepted spots flagged, the random sample for hand judgement, and time per target (cold cache and warm).
#
#   bench/review-real-forks.sh BUILD_DIR OUT_DIR GAURAV_CHECKOUT NRIPESH_CHECKOUT GONIZ_CHECKOUT
#
# The checkouts are the commits named in the ground-truth files (gauravsaini/mlx-vulkan, NripeshN/mlx pull 4,
# goniz/mlx), extracted as they are; nothing else is configured (root and target only, as a user runs it).
set -euo pipefail
build=$1 out=$2; shift 2
tool=$build/review/m2v-review
gt=$(cd "$(dirname "$0")/../review/groundtruth" && pwd)
mkdir -p "$out"
names=(gauravsaini-mlx-vulkan NripeshN-mlx goniz-mlx)
roots=("$@")
# targets per fork: the whole backend, then a function, a class and a file (cold: each with an empty cache)
targets_0=("mlx/backend/vulkan" "Gather::eval_gpu" "Reduce" "mlx-src/mlx/backend/vulkan/fft.cpp")
targets_1=("mlx/backend/vulkan" "copy_gpu_inplace" "ScaledDotProductAttention" "mlx/backend/vulkan/scatter.cpp")
targets_2=("mlx/backend/vulkan" "Gather::eval_gpu" "RandomBits" "mlx/backend/vulkan/softmax.cpp")
: > "$out/times.tsv"
for i in 0 1 2; do
  name=${names[$i]} root=${roots[$i]}
  eval "targets=(\"\${targets_$i[@]}\")"
  for t in "${targets[@]}"; do
    for mode in cold warm; do
      cache=$out/cache-$name-$(echo "$t" | tr '/:' '__')
      [ "$mode" = cold ] && rm -rf "$cache"
      tag=$(echo "$t" | tr '/:' '__')
      /usr/bin/time -f "%e %U" -o "$out/time.tmp" "$tool" --root "$root" "$t" --json --cache-dir "$cache" \
        > "$out/$name.$tag.$mode.json" 2> "$out/$name.$tag.$mode.err" || true
      n=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['findings']))" \
          "$out/$name.$tag.$mode.json" 2>/dev/null || echo "?")
      printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$t" "$mode" "$(cat "$out/time.tmp")" "$n" >> "$out/times.tsv"
    done
  done
  python3 "$gt/score.py" "$gt/$name.json" "$out/$name.mlx_backend_vulkan.warm.json" > "$out/$name.score.txt" || true
done
python3 "$gt/sample.py" gauravsaini-mlx-vulkan="$out/gauravsaini-mlx-vulkan.mlx_backend_vulkan.warm.json" \
  NripeshN-mlx="$out/NripeshN-mlx.mlx_backend_vulkan.warm.json" goniz-mlx="$out/goniz-mlx.mlx_backend_vulkan.warm.json" \
  > "$out/sample.jsonl"
cat "$out"/*.score.txt
column -t -s $'\t' "$out/times.tsv"
