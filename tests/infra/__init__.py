"""Start real services (Slurm, sshd, Ray) on 127.0.0.1 for tests; stop them by PID.

Each module exposes a `start_*` function returning a handle with `.stop()`, and raises
`ServiceUnavailable` when a binary is missing so fixtures can skip with a clear reason.
"""
