#!/usr/bin/env bash
# bench/gpu-apps.sh [BUNDLE] [BENCH_DATA]: on the GPU machine, times the programs on the larger graphs:
#   mcl  hybla on the GPU against Debian's mcl with 16 threads (-te 16), same inputs (mcl label files), and the
#        split/join distance between the two clusterings; hybla's peak GPU memory;
#   contract  by the mcl clusters, against two cuSPARSE SpGEMMs (bench/gpu_contract.cpp);
#   tc, pagerank  the CUDA backend against the CPU backend (times as the programs report them).
# BUNDLE: gpu-bundle/ (binaries, libs); BENCH_DATA: bench-data/ (graph files of ../shared/data, Debian's mcl
# binary with its library, make-abc.sh). Logs go to $OUT (or ./gpu-apps-logs); a summary table at the end.
# MCL_GRAPHS, APP_GRAPHS, PPR_GRAPHS choose the graphs of each part (empty: the part is skipped); DEBIAN_MCL=0
# skips Debian's mcl (the mcl table then compares hybla with itself; contract still gets hybla's clusters).
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-gpu-bundle}
bdata=${2:-bench-data}
logs=${OUT:-gpu-apps-logs}
work=$(mktemp -d)
mkdir -p "$logs"
export LD_LIBRARY_PATH="$PWD/$bundle/lib:$PWD/$bdata:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
"$bdata/make-abc.sh" "$work" > "$logs/abc.txt" 2>&1
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
now() { date +%s.%N; }
echo "| graph | vertices | hybla GPU s | mcl -te 16 s | speed-up | split/join distance | clusters (hybla/mcl) | peak GPU MiB |" > "$logs/mcl.md"
echo "|---|---|---|---|---|---|---|---|" >> "$logs/mcl.md"
for g in ${MCL_GRAPHS-musae_facebook git_web_ml rmat16 slashdot}; do
    in="$work/$g.abc"
    t0=$(now)
    "$bundle/bin/mcl" "$in" --abc --backend cuda -o "$work/hy.$g" > "$logs/mcl.hybla.$g.log" 2>&1
    t1=$(now)
    if [ "${DEBIAN_MCL:-1}" = 1 ]; then
        timeout ${MCL_TIMEOUT:-240} "$bdata/mcl" "$in" --abc -te 16 -o "$work/mcl.$g" > "$logs/mcl.debian.$g.log" 2>&1
        rc=$?
    else
        cp "$work/hy.$g" "$work/mcl.$g"; rc=0  # DEBIAN_MCL=0: hybla's clusters only (for contract)
    fi
    t2=$(now)
    "$bundle/bin/mcl" "$in" --abc --backend cuda -o /dev/null --quiet --compare "$work/mcl.$g" > "$logs/mcl.compare.$g.log" 2>&1
    d=$(grep -o 'distance to [^:]*: [0-9]*' "$logs/mcl.compare.$g.log" | awk '{print $NF}')
    n=$(grep -o '[0-9]* vertices' "$logs/mcl.hybla.$g.log" | head -1 | awk '{print $1}')
    peak=$(grep -o 'pool: [0-9.]*' "$logs/mcl.hybla.$g.log" | awk '{print $2}')
    ch=$(wc -l < "$work/hy.$g"); cm=$(wc -l < "$work/mcl.$g" 2>/dev/null || echo "-")
    th=$(secs "$t0" "$t1"); tm=$(secs "$t1" "$t2")
    [ $rc -ne 0 ] && tm=">$tm (rc $rc)"
    echo "| $g | $n | $th | $tm | $(awk -v a="$th" -v b="$tm" 'BEGIN { if (a > 0 && b+0 > 0) printf "%.1fx", b / a; else print "-" }') | ${d:-?} | $ch/$cm | ${peak:-?} |" >> "$logs/mcl.md"
done
# contract by hybla's mcl clusters against two cuSPARSE SpGEMMs.
for g in ${MCL_GRAPHS-musae_facebook git_web_ml rmat16 slashdot}; do
    [ -s "$work/hy.$g" ] && "$bundle/bin/gpu_contract" "$work/$g.abc" "$work/hy.$g" > "$logs/contract.$g.log" 2>&1
done
cat "$logs"/contract.*.log > "$logs/contract.txt" 2>/dev/null
# tc and pagerank: CUDA against CPU on the real graphs.
declare -A file=([soc-Slashdot0902]=soc-Slashdot0902/soc-Slashdot0902.txt.gz [git_web_ml]=git_web_ml/git_edges.csv.gz
                 [deezer_HU]=deezer_HU/HU_edges.csv.gz [musae_facebook]=musae_facebook/musae_facebook_edges.csv.gz
                 [luxembourg_osm]=luxembourg_osm/luxembourg_osm.mtx.gz)
echo "| graph | triangles | tc GPU s | tc CPU (16 threads) s | triangles/s on the GPU | pagerank GPU s (iterations) | pagerank CPU s |" > "$logs/apps.md"
echo "|---|---|---|---|---|---|---|" >> "$logs/apps.md"
for g in ${APP_GRAPHS-soc-Slashdot0902 git_web_ml deezer_HU musae_facebook luxembourg_osm}; do
    f="$bdata/shared/${file[$g]}"
    "$bundle/bin/tc" "$f" --backend cuda --validate > "$logs/tc.$g.log" 2>&1
    tri=$(tail -1 "$logs/tc.$g.log")
    tg=$(grep -o 'counted on cuda[^)]* in [0-9.]*' "$logs/tc.$g.log" | awk '{print $NF}')
    tc=$(grep -o 'counted on cpu in [0-9.]*' "$logs/tc.$g.log" | awk '{print $NF}')
    [ -z "$tc" ] && { "$bundle/bin/tc" "$f" --backend cpu > "$logs/tc.cpu.$g.log" 2>&1; tc=$(grep -o 'counted on cpu in [0-9.]*' "$logs/tc.cpu.$g.log" | awk '{print $NF}'); }
    "$bundle/bin/pagerank" "$f" --backend cuda -o /dev/null > "$logs/pr.$g.log" 2>&1
    "$bundle/bin/pagerank" "$f" --backend cpu -o /dev/null > "$logs/pr.cpu.$g.log" 2>&1
    pg=$(grep -o '[0-9]* iterations in [0-9.]*' "$logs/pr.$g.log" | awk '{print $4" ("$1")"}')
    pc=$(grep -o '[0-9]* iterations in [0-9.]*' "$logs/pr.cpu.$g.log" | awk '{print $4}')
    echo "| $g | $tri | ${tg:-?} | ${tc:-?} | $(awk -v t="$tri" -v s="$tg" 'BEGIN { if (s > 0) printf "%.3g", t / s; else print "-" }') | ${pg:-?} | ${pc:-?} |" >> "$logs/apps.md"
done
# Personalized PageRank for 64 seeds (one SpMM per iteration) against single-source PageRank per iteration.
echo "| graph | pagerank ms/iteration (GPU) | personalized, 64 seeds: ms/iteration (GPU) | iterations |" > "$logs/ppr.md"
echo "|---|---|---|---|" >> "$logs/ppr.md"
for g in ${PPR_GRAPHS-soc-Slashdot0902 git_web_ml}; do
    f="$bdata/shared/${file[$g]}"
    "$bundle/bin/pagerank" "$f" --backend cuda -o "$work/pr.txt" > "$logs/ppr.single.$g.log" 2>&1
    head -64 "$work/pr.txt" | awk '{print $1}' > "$work/seeds.txt"
    "$bundle/bin/pagerank" "$f" --backend cuda --seeds "$work/seeds.txt" -o /dev/null > "$logs/ppr.$g.log" 2>&1
    one=$(grep -o '[0-9]* iterations in [0-9.]*' "$logs/ppr.single.$g.log" | awk '{printf "%.3f", 1000 * $4 / $1}')
    many=$(grep -o '[0-9]* iterations in [0-9.]*' "$logs/ppr.$g.log" | awk '{printf "%.3f (%d)", 1000 * $4 / $1, $1}')
    echo "| $g | ${one:-?} | ${many:-?} | |" >> "$logs/ppr.md"
done
rm -rf "$work"
cat "$logs/mcl.md"; echo; cat "$logs/contract.txt"; echo; cat "$logs/apps.md"; echo; cat "$logs/ppr.md"
