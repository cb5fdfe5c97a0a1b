"""Thin tasks: fetch by id, return if gone, call a service. Ids in, never objects.

One module per domain; web code never imports them, it enqueues by name (workers.queue.enqueue).
Every task is safe to run twice (acks_late redelivers after a worker dies): the services move
rows only by conditional updates, and job dispatch holds a per-job advisory lock.
"""
