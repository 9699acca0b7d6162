"""Running grids: drive.py (looks, confirmation) over run.py (one grid) over schedule.py (all the Ray code);
cell states (ledger.py), leases (lease.py), sessions (session.py), stops (stop.py)."""
