#!/usr/bin/env bash
# Run here, in the project root, after ../shared/gpu/prepare.sh (which fetches vLLM 0.26.0's wheels).
# Adds what the harness needs on the device image beyond vLLM and the image's own packages
# (Hydra, DuckDB, Ray), as more chunks h_NN of the same size, and the install step for them.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
rm -rf .gpu/harness; mkdir -p .gpu/harness .gpu/chunks
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --abi cp312 --abi abi3 --abi none --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any -d .gpu/harness \
  hydra-core==1.3.2 omegaconf==2.3.0 duckdb==2.0.1 ray==2.60.0
# Hydra's parser runtime is published as source only: built on the device (pure Python).
python3 -m pip download -q --no-deps --no-binary=:all: -d .gpu/harness antlr4-python3-runtime==4.9.3
rm -f .gpu/chunks/h_*
tar cf - -C .gpu harness | split -b 58M -d - .gpu/chunks/h_
ls -la .gpu/chunks
