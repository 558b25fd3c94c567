#!/usr/bin/env bash
# The main job: installs what is missing, builds, runs a scaling study of LeNet on
# Fashion-MNIST over 1 and 2 devices: the three strategies (data-parallel replicas, a
# model-parallel pipeline, layer-parallel shards) on the same global batch, data parallelism
# with every kvstore (local and device in one process; dist_sync, dist_device_sync,
# dist_async and dist_allreduce as MPI jobs of CPU workers, with parameter servers where the
# mode has them); then, in the same study, gradient compression on 2 devices (fp16, 2bit,
# topk against none, device kvstore) and mixed precision (fp16 with loss scaling, bf16); a
# small GPT-2-style transformer (gpt-mini, AdamW) in the three strategies on 1 and 2 devices;
# draws the plots (memory per device and bytes moved per strategy, the pipeline's bubble,
# staleness for dist_async, bytes on the wire and accuracy per compressor and precision,
# fp16's loss scale), writes each study's HTML report (one self-contained page), projects the
# data-parallel rows to 4-16 devices, writes a timeline of a few steps, and prints where the
# HDF5 file, the plots, the pages, the projection and the timeline are.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
mx=build/harness/mxbench
out=${MXBENCH_DEMO_OUT:-out/demo}
mkdir -p "$out"
$mx info
echo
# A sweep exits 1 when a row failed or diverged (a dist_async row can, its workers stale on
# shared cores): that is a result, shown in the table; the demo goes on to the plots
status=0
$mx sweep --strategies data,model,layer --gpus 1,2 --batch-mode global --batch 128 \
          --kvstore local,device,dist_sync,dist_device_sync,dist_async,dist_allreduce \
          --workload lenet --epochs 1 --out "$out/sweep.h5" --force || status=$?
((status <= 1)) || exit "$status"
echo
# the same study grows by the compressors (--resume runs only the rows it lacks); 2bit's
# threshold and topk's ratio as measured for lenet (docs/parallelism.md, Gradient compression)
$mx sweep --strategies data --gpus 2 --batch-mode global --batch 128 --kvstore device \
          --compression none,fp16,2bit,topk --threshold 0.005 --topk-ratio 0.05 \
          --workload lenet --epochs 1 --out "$out/sweep.h5" --resume || status=$?
((status <= 1)) || exit "$status"
# 2bit at MXNet's threshold trains as well as none with SGD without momentum at the same
# long-run step (lr 0.5 = 0.05 / (1 - 0.9); docs/parallelism.md, Gradient compression)
$mx sweep --strategies data --gpus 2 --batch-mode global --batch 128 --kvstore device \
          --compression 2bit --threshold 0.5 --lr 0.5 --momentum 0 \
          --workload lenet --epochs 1 --out "$out/sweep.h5" --resume || status=$?
((status <= 1)) || exit "$status"
echo
# and by mixed precision: f32 master weights, 16-bit activations (about half the bytes)
$mx sweep --strategies data --gpus 2 --batch-mode global --batch 128 --kvstore device --amp off,fp16,bf16 \
          --workload lenet --epochs 1 --out "$out/sweep.h5" --resume || status=$?
((status <= 1)) || exit "$status"
echo
# a timeline of 5 steps of data parallelism on 2 devices: every layer, push, pull and reduction
# a small transformer: gpt-mini on 60 KB of English (the fortunes package) in every strategy
head -c 60000 /usr/share/games/fortunes/cookie >"$out/text.txt"
$mx sweep --strategies data,model,layer --gpus 1,2 --batch-mode global --batch 32 --workload gpt-mini \
          --optimizer adamw --lr 0.003 --epochs 1 --data "$out/text.txt" --out "$out/gpt.h5" --force || status=$?
((status <= 1)) || exit "$status"
echo
$mx train --workload lenet --dataset synthetic --gpus 2 --steps 12 --warmup-steps 2 --trace "$out/trace.json"
echo
$mx plot "$out/sweep.h5" --out "$out/plots"
$mx plot "$out/gpt.h5" --out "$out/gpt-plots"
# each study as one self-contained page: the answer, the figures inline, the tables
$mx report "$out/sweep.h5" --format html --out "$out/plots/report.html"
$mx report "$out/gpt.h5" --format html --out "$out/gpt-plots/report.html"
echo
# past the machine: each data-parallel configuration's step model, fitted to its 1- and
# 2-device runs, predicted for 4 to 16 devices and drawn with the measured points
$mx project "$out/sweep.h5" --gpus 4,8,16 --plot "$out/projection"
echo
echo "results: $out/sweep.h5   (h5dump -d /summary $out/sweep.h5; mxbench report $out/sweep.h5)"
echo "plots:   $out/plots/*.png and *.svg"
echo "report:  $out/plots/report.html (the study on one page: the answer, the figures, every run; open it in a browser)"
echo "transformer: $out/gpt.h5 and $out/gpt-plots/ (gpt-mini: data, model and layer on 1 and 2 devices; mxbench report $out/gpt.h5)"
echo "transformer report: $out/gpt-plots/report.html"
echo "projection: $out/projection/*.png (mxbench project $out/sweep.h5 --gpus 4,8,16)"
echo "timeline: $out/trace.json (a Chrome trace: open it in Perfetto, ui.perfetto.dev, or chrome://tracing)"
((status == 0)) || echo "note: some rows did not end ok; their status and reason are in the tables above"
