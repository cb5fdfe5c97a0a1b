#!/usr/bin/env bash
# Installs the system packages the cluster-backend tests start for real:
# a single-node Slurm 22.05 (slurmctld + slurmd + client tools, munge for auth)
# and an OpenSSH server (the "login node" reached over SSH on 127.0.0.1:2222).
# Ray is a Python package in the dev dependency group (uv sync), not apt.
# Idempotent and non-interactive; safe to run on every CI job.
set -euo pipefail

packages=(
  slurm-wlm      # meta package: pulls slurmctld/slurmd/slurm-client of the same version
  slurmctld
  slurmd
  slurm-client   # sbatch squeue scontrol sacct scancel sinfo
  munge          # munged + mungekey: Slurm's authentication
  openssh-server # /usr/sbin/sshd + ssh-keygen
  openssh-client # ssh-keyscan, used to build a known_hosts file
  passwd         # useradd / usermod for the SSH test user
  procps         # ps / pkill used by humans debugging; kept small
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # No recommends: slurm-wlm would otherwise pull in mail servers and docs.
  apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
fi

# Package install scripts may try to start daemons; tests start their own, bound to 127.0.0.1.
echo "cluster packages present: ${packages[*]}"
