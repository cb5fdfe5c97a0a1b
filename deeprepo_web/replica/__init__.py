"""Page reads from a streaming read replica (DEEPREPO_REPLICA_URL), when one is configured.

Only GET/HEAD page requests read from it (middleware.py opens that door); everything else —
workers, commands, API writes, a request after its own write — stays on the primary. Without a
replica none of this is installed and every query goes to "default" as before.
"""
