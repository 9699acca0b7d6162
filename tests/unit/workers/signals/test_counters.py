from workers.signals.counters import parse_counters

EXPOSITION = """\
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="tiny"} 120.0
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 10.0
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="tiny"} 80.0
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 30.0
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="1"} 8.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="0"} 9.0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="tiny"} 3.0
# TYPE vllm:generation_tokens_created gauge
vllm:generation_tokens_created{engine="0",model_name="tiny"} 1.7e9
"""


def test_parse_sums_counters_and_orders_positions():
    counters = parse_counters(EXPOSITION)
    assert counters.generation_tokens == 120.0
    assert counters.spec_drafts == 10.0
    assert counters.spec_draft_tokens == 80.0
    assert counters.spec_accepted_tokens == 30.0
    assert counters.spec_accepted_per_pos == [9.0, 8.0]


def test_delta_subtracts_and_handles_new_positions():
    before = parse_counters(EXPOSITION)
    after = parse_counters(EXPOSITION.replace("120.0", "200.0").replace("} 8.0", "} 11.0"))
    delta = after.minus(before)
    assert delta.generation_tokens == 80.0
    assert delta.spec_drafts == 0.0
    assert delta.spec_accepted_per_pos == [0.0, 3.0]
    assert delta.as_columns()["srv_generation_tokens"] == 80.0
