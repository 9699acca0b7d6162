#!/usr/bin/env bash
# A side environment holding another vLLM release, for `make compat` (experiments/vllm_compat.py):
#   scripts/compat_venv.sh 0.33.0   ->  .cache/compat/vllm-0.33.0/bin/python
# The release's wheel is installed without its dependencies (its CUDA torch alone is several GB);
# a .pth file puts the project's own .venv packages (torch 2.13+cpu, transformers, arctic-inference,
# the harness itself) behind it, so vLLM's argument parser and config classes import, and what does
# not import on a machine without a GPU is read from source by the checks. Idempotent: a finished
# environment is kept (delete the folder to rebuild it). Prints the interpreter's path last.
set -euo pipefail

VERSION=${1:?usage: scripts/compat_venv.sh VLLM_VERSION (e.g. 0.33.0)}
VENV=${VENV:-.venv}
ROOT=${COMPAT_DIR:-.cache/compat}
SIDE="$ROOT/vllm-$VERSION"
WHEELS="$ROOT/wheels"
STAMP="$SIDE/.compat-ready"

if [ ! -f "$STAMP" ]; then
  mkdir -p "$WHEELS"
  wheel=$(ls "$WHEELS"/vllm-"$VERSION"-*.whl 2>/dev/null | head -n 1 || true)
  if [ -z "$wheel" ]; then
    echo "compat: downloading the vllm $VERSION wheel (no dependencies)" >&2
    "$VENV/bin/python" -m pip download --disable-pip-version-check -q --no-deps -d "$WHEELS" "vllm==$VERSION" >&2
    wheel=$(ls "$WHEELS"/vllm-"$VERSION"-*.whl | head -n 1)
  fi
  rm -rf "$SIDE"
  # The project's interpreter, so the .venv's packages behind it match its Python version.
  "$VENV/bin/python" -m venv --without-pip "$SIDE"
  base=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  side=$("$SIDE/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  # addsitedir (not a bare path): the .venv's own .pth files (its editable installs) are read too.
  echo "import site; site.addsitedir('$base')" >"$side/_lever_grid_project.pth"
  if [ -x "$VENV/bin/uv" ]; then
    "$VENV/bin/uv" pip install -q --no-deps --python "$SIDE/bin/python" "$wheel" >&2
  else
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q --no-deps --target "$side" "$wheel" >&2
  fi
  "$SIDE/bin/python" -c "import importlib.metadata as m; assert m.version('vllm') == '$VERSION', m.version('vllm')"
  # The release's own new dependencies that the project's venv lacks (0.33: orjson), without theirs;
  # not the GPU stack (torch and its CUDA builds, kernels, NVIDIA libraries): the checks read no GPU code.
  missing=$("$SIDE/bin/python" - "$wheel" <<'PY'
import importlib.metadata as md
import re
import sys
import zipfile

from packaging.markers import default_environment
from packaging.requirements import Requirement

GPU_ONLY = re.compile(
    r"^(torch|torchaudio|torchvision|torchcodec|triton|xformers|flashinfer|nvidia-|nvtx|pynvvideocodec|"
    r"apache-tvm-ffi|tilelang|fastsafetensors|instanttensor|quack-kernels|tokenspeed-mla|humming-kernels|cupy)",
    re.I,
)
wheel = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
environment = default_environment() | {"extra": ""}
for line in wheel.read(meta).decode().splitlines():
    if not line.startswith("Requires-Dist:"):
        continue
    req = Requirement(line.split(":", 1)[1].strip())
    if (req.marker and not req.marker.evaluate(environment)) or GPU_ONLY.match(req.name):
        continue
    try:
        md.version(req.name)
    except md.PackageNotFoundError:
        print(f"{req.name}{req.specifier}")
PY
)
  if [ -n "$missing" ]; then
    echo "compat: vllm $VERSION needs what the project's venv lacks: $(echo $missing)" >&2
    if [ -x "$VENV/bin/uv" ]; then
      "$VENV/bin/uv" pip install -q --no-deps --python "$SIDE/bin/python" $missing >&2
    else
      "$VENV/bin/python" -m pip install --disable-pip-version-check -q --no-deps --target "$side" $missing >&2
    fi
  fi
  touch "$STAMP"
fi
echo "$SIDE/bin/python"
