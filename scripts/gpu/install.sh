# On the device, sourced: `source scripts/gpu/install.sh`. Installs once per machine: vLLM 0.26.0's wheels
# and arctic-inference into $HOME/site (../shared/gpu recipe), the harness's extra wheels, and this
# project's entry points (the K-pad / dynamic-K plugins) into $HOME/harness; the code itself is
# imported from the checkout, which goes first on PYTHONPATH.
export PYTHONPATH=$PWD:$HOME/harness:$HOME/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 RAY_USAGE_STATS_ENABLED=0
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ ! -f $HOME/site/.installed ]; then
  ( set -e
    cd $HOME/stash && cat c_* | tar xf - && cat h_* | tar xf -
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $HOME/site wheels/*.whl harness/*.whl
    python3 -m pip install -q --no-index --no-deps --no-build-isolation --target $HOME/site \
      wheels/arctic_inference-*.tar.gz harness/antlr4-python3-runtime-*.tar.gz
    touch $HOME/site/.installed ) || { echo "install failed"; return 1; }
fi
rm -rf $HOME/harness && python3 -m pip install -q --no-index --no-deps --no-build-isolation --target $HOME/harness . \
  || { echo "harness entry points failed"; return 1; }
python3 -c "import vllm, torch, ray, duckdb, hydra; print('vllm', vllm.__version__, 'torch', torch.__version__, 'ray', ray.__version__, torch.cuda.device_count(), 'x', torch.cuda.get_device_name(0))"
