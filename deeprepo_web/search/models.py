"""Search keeps no tables of its own: the words and trigram indexes are expression indexes on the
source tables (runs_turn, runs_toolcall, runs_rollout, runs_example), made by search migration 0002
over the bodies in texts.py. A row is searchable as soon as its ingest commits, and goes with it."""
