import http.server
import threading
import time

import pytest

from workers.signals.server_load import LoadSample, ServerLoadSampler, columns, parse_gauges

EXPOSITION = """# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 30.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 2.0
# TYPE vllm:generation_tokens counter
vllm:generation_tokens_total{engine="0",model_name="m"} 10.0
"""


def test_gauges_are_read_with_the_prometheus_parser():
    assert parse_gauges(EXPOSITION) == (30.0, 2.0)
    assert parse_gauges("") == (0.0, 0.0)


def test_columns_average_only_samples_inside_the_window():
    samples = [LoadSample(t, r, w) for t, r, w in [(0, 2, 0), (10, 32, 0), (20, 30, 1), (30, 1, 0)]]
    cols = columns(samples, 5, 25)
    assert cols["srv_load_samples"] == 2
    assert cols["srv_running_mean"] == pytest.approx(31.0)
    assert cols["srv_running_min"] == 30
    assert cols["srv_waiting_max"] == 1
    assert columns(samples, None, None)["srv_running_mean"] is None


def test_the_sampler_scrapes_a_server_until_it_exits():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = EXPOSITION.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with ServerLoadSampler(f"http://127.0.0.1:{server.server_port}", "k", interval_s=0.05) as sampler:
            time.sleep(0.5)
        count = len(sampler.samples)
        time.sleep(0.2)
        assert count >= 3 and len(sampler.samples) == count  # stopped at exit
        assert {(s.running, s.waiting) for s in sampler.samples} == {(30.0, 2.0)}
    finally:
        server.shutdown()
