"""Jobs: templates, clusters, launch and cancel (web), dispatch and sync (workers).

Every status change is a conditional UPDATE (`filter(id=…, status=OLD).update(status=NEW)`)
that must change exactly one row before anything happens outside the database, plus a
JobEvent. A duplicated, retried or redelivered task therefore finds the row already moved
and does nothing. Dispatch also holds a Postgres advisory lock on the job while it talks to
the cluster: the lock dies with the worker's connection, so a task redelivered after a worker
was killed mid-submit knows the previous attempt is gone, looks the job up on the cluster
(adopt, never duplicate) and only then submits again.
"""
