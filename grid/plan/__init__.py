"""From cells to launches: engine groups (groups.py), their order and cost (cost.py, hours.py, store_costs.py,
simulate.py), the drift anchor (anchor.py), the window fix for INVALID cells (window_fix.py)."""
