import pytest

from grid.cli.plan_report import simulate_plan
from grid.plan.simulate import SimJob, lower_bound, simulate
from vocab.errors import ConfigError


def test_lower_bound_is_the_larger_of_area_and_longest_job():
    jobs = [SimJob("a", 8, 10.0), SimJob("b", 1, 100.0)]
    assert lower_bound(jobs, [8, 8]) == 100.0
    assert lower_bound([SimJob("c", 8, 10.0)] * 4, [8, 8]) == 20.0


def test_bundles_never_share_more_gpus_than_a_node_has():
    jobs = [SimJob(f"j{i}", gpus, 10.0 + i) for i, gpus in enumerate([8, 4, 4, 2, 2, 2, 1, 1, 1, 1])]
    result = simulate(jobs, [8, 4], max_in_flight=12)
    times = sorted({p.start_s for p in result.placements} | {p.end_s for p in result.placements})
    gpus = {j.label: j.gpus for j in jobs}
    for t in times:
        for node, capacity in enumerate([8, 4]):
            used = sum(
                gpus[p.label] for p in result.placements if p.node == node and p.start_s <= t < p.end_s
            )
            assert used <= capacity
    assert result.makespan_s >= result.lower_bound_s


def test_max_in_flight_serialises():
    jobs = [SimJob(f"j{i}", 1, 10.0) for i in range(4)]
    assert simulate(jobs, [8], max_in_flight=1).makespan_s == 40.0
    assert simulate(jobs, [8], max_in_flight=4).makespan_s == 10.0


def test_job_larger_than_any_node_is_rejected():
    with pytest.raises(ConfigError):
        simulate([SimJob("big", 16, 1.0)], [8, 8], 4)


def test_final_grid_on_four_8_gpu_nodes_is_within_10_percent_of_the_bound():
    summary = simulate_plan(["experiment=final", "cluster=h200x8_4nodes"])
    assert summary["ratio"] <= 1.10


def test_a_gpu_cluster_without_nodes_cannot_be_simulated():
    with pytest.raises(ConfigError, match="describes no nodes"):
        simulate_plan(["experiment=smoke", "ray.use_gpus=true"])


def test_a_local_cpu_run_is_simulated_on_this_machines_engine_slots(monkeypatch):
    import grid.cli.plan_report

    monkeypatch.setattr(grid.cli.plan_report.os, "cpu_count", lambda: 8)
    summary = simulate_plan(["experiment=smoke", "ray.cpus_per_engine=2"])
    assert summary["nodes_gpus"] == [4] and summary["engine_launches"] >= 1
    assert summary["makespan_h"] >= summary["lower_bound_h"] > 0
