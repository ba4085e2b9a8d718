#!/usr/bin/env bash
# bench-data/make-abc.sh OUTDIR: the mcl bench inputs as mcl label files (tab-separated), from the carried graphs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1
mkdir -p "$out"
zcat "$here/shared/soc-Slashdot0902/soc-Slashdot0902.txt.gz" | grep -v '^#' | tr -d '\r' | awk '{print $1"\t"$2}' > "$out/slashdot.abc"
zcat "$here/shared/musae_facebook/musae_facebook_edges.csv.gz" | tail -n +2 | tr -d '\r' | tr ',' '\t' > "$out/musae_facebook.abc"
zcat "$here/shared/git_web_ml/git_edges.csv.gz" | tail -n +2 | tr -d '\r' | tr ',' '\t' > "$out/git_web_ml.abc"
python3 - "$out/rmat16.abc" <<'PY'
import random, sys
random.seed(16)
scale, ef = 16, 16
a, b, c = 0.57, 0.19, 0.19
with open(sys.argv[1], 'w') as f:
    for _ in range((1 << scale) * ef):
        u = v = 0
        for bit in range(scale):
            r = random.random()
            if r < a: pass
            elif r < a + b: v |= 1 << bit
            elif r < a + b + c: u |= 1 << bit
            else: u |= 1 << bit; v |= 1 << bit
        if u != v: f.write(f"{u}\t{v}\n")
PY
wc -l "$out"/*.abc
