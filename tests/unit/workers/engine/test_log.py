from workers.engine.log import effective_config

SUFFIX_LOG = """
(APIServer pid=1) INFO [api_utils.py:286] non-default args: {'model': 'x', 'speculative_config': {...}}
(APIServer pid=1) WARNING [vllm.py:1605] Async scheduling not supported with suffix-based speculative decoding and will be disabled.
(APIServer pid=1) WARNING [vllm.py:725] Model Runner V2 requires Triton; using the V1 model runner instead.
(EngineCore pid=2) INFO [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: model='x', compilation_config={'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'cudagraph_capture_sizes': [1, 2, 4, 8, 288], 'x': 1}
"""  # noqa: E501

VAN_LOG = (
    "non-default args: {'async_scheduling': True}\\nInitializing a V1 LLM engine (v0.26.0) with config: x"
)


def test_suffix_log_shows_async_off_and_graph_settings():
    cfg = effective_config(SUFFIX_LOG)
    assert cfg == {
        "engine_log_version": "0.32.0",
        "engine_async_scheduling": False,
        "engine_model_runner": "v1",
        "engine_cudagraph_mode": "FULL_AND_PIECEWISE",
        "engine_max_capture_size": 288,
        "engine_nvfp4_kernel": None,
    }


def test_van_log_shows_async_on():
    cfg = effective_config(VAN_LOG)
    assert cfg["engine_async_scheduling"] is True
    assert cfg["engine_log_version"] == "0.26.0"
    assert cfg["engine_cudagraph_mode"] is None


def test_van_noasync_log_shows_async_off():
    # vLLM 0.26 on the H200: the flag appears only among the non-default args.
    log = "(APIServer pid=1) INFO [api_utils.py:273] non-default args: {'async_scheduling': False, 'x': 1}"
    assert effective_config(log)["engine_async_scheduling"] is False


def test_empty_log_is_all_unknown():
    assert set(effective_config("").values()) == {None}


def test_the_nvfp4_kernel_is_recorded_for_w4a4_cells():
    hopper = "(Worker pid=9) INFO 11-30 [__init__.py:1196] Using MarlinNvFp4LinearKernel for NVFP4 GEMM"
    assert effective_config(hopper)["engine_nvfp4_kernel"] == "MarlinNvFp4LinearKernel"
    assert effective_config("no quantisation here")["engine_nvfp4_kernel"] is None
