"""Bulk, idempotent ingest of metrics and rollouts.

It goes around the ORM on purpose: one round trip per table per batch (unnest arrays, COPY),
ON CONFLICT DO NOTHING for retries. Every batch is one transaction.
"""
