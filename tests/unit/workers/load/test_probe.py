import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from workers.load.probe import ProbeError, parse_prompt_logprobs, probe_body, run_probe
from workers.load.prompts import Prompt

# The shape of vLLM's /v1/completions reply with prompt_logprobs=2: position 0 has
# none; each later one holds the top 2 by rank plus the prompt's own token when it
# ranks lower (here id 77, rank 9 at position 2).
REPLY = {
    "choices": [
        {
            "text": "x",
            "prompt_logprobs": [
                None,
                {"5": {"logprob": -0.5, "rank": 1, "decoded_token": "a"},
                 "6": {"logprob": -1.5, "rank": 2, "decoded_token": "b"}},
                {"77": {"logprob": -6.0, "rank": 9, "decoded_token": "z"},
                 "8": {"logprob": -2.0, "rank": 2, "decoded_token": "d"},
                 "7": {"logprob": -0.2, "rank": 1, "decoded_token": "c"}},
            ],
        }
    ]
}  # fmt: skip


def test_rows_hold_the_top_k_by_rank_without_the_lower_ranked_prompt_token():
    rows = parse_prompt_logprobs("p0", REPLY, top_k=2)
    assert [(r.position, r.token_ids, r.logprobs) for r in rows] == [
        (1, [5, 6], [-0.5, -1.5]),
        (2, [7, 8], [-0.2, -2.0]),
    ]


def test_a_reply_without_prompt_logprobs_is_a_probe_error():
    with pytest.raises(ProbeError, match="no prompt_logprobs"):
        parse_prompt_logprobs("p0", {"choices": [{"text": "x"}]}, top_k=2)
    with pytest.raises(ProbeError, match="null"):
        parse_prompt_logprobs("p0", {"choices": [{"prompt_logprobs": None}]}, top_k=2)


def test_the_body_scores_the_prompt_and_generates_one_token():
    body = probe_body("tiny", "def f():", 5)
    assert body == {"model": "tiny", "prompt": "def f():", "max_tokens": 1, "temperature": 0.0,
                    "prompt_logprobs": 5}  # fmt: skip


class _Server(BaseHTTPRequestHandler):
    """Answers REPLY to prompts starting with 'ok', HTTP 400 otherwise."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ok = body["prompt"].startswith("ok") and self.headers["Authorization"] == "Bearer k"
        payload = json.dumps(REPLY if ok else {"error": {"message": "prompt_logprobs not allowed"}}).encode()
        self.send_response(200 if ok else 400)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = HTTPServer(("127.0.0.1", 0), _Server)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_run_probe_scores_each_prompt_and_names_the_one_that_failed(server):
    chat = Prompt("c1", messages=({"role": "user", "content": "ok then"},))
    rows = run_probe(server, "k", "tiny", [Prompt("p1", prompt="ok"), chat], top_k=2)
    assert [(r.prompt_id, r.position) for r in rows] == [("p1", 1), ("p1", 2), ("c1", 1), ("c1", 2)]
    with pytest.raises(ProbeError, match=r"prompt p2: HTTP 400: .*prompt_logprobs not allowed"):
        run_probe(server, "k", "tiny", [Prompt("p1", prompt="ok"), Prompt("p2", prompt="no")], top_k=2)
