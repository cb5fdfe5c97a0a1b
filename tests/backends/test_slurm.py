from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.backends.helpers import hostile_values, probe_command, probe_env, wait_file, wait_state
from tests.infra.slurm import SlurmCluster
from workers.backends import Backend, BackendError, JobSpec, JobState, Resources, backend_for

DONE = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.LOST}


def test_scancel_by_hand_is_noticed(slurm_backend: Backend, slurm_cluster: SlurmCluster, work: Path) -> None:
    out = work / "o.json"
    jid = slurm_backend.submit(JobSpec(job_id="c2", command=probe_command([]), env=probe_env(out, sleep=60)))
    wait_file(out)
    assert slurm_cluster.run("scancel", jid).returncode == 0
    status = wait_state(slurm_backend, jid, DONE)
    assert status.state is JobState.CANCELLED and "on the cluster" in status.reason


def test_node_failure_is_told_apart_from_the_programs_failure(slurm_backend: Backend, slurm_cluster: SlurmCluster,
                                                              work: Path) -> None:
    out = work / "o.json"
    jid = slurm_backend.submit(JobSpec(job_id="nf1", command=probe_command([]), env=probe_env(out, sleep=60)))
    wait_file(out)
    # Not requeueable (JobRequeue=0 or --no-requeue): a node going down ends the job NODE_FAIL.
    assert slurm_cluster.run("scontrol", "update", f"jobid={jid}", "requeue=0").returncode == 0
    try:
        assert slurm_cluster.run("scontrol", "update", "nodename=localhost", "state=down",
                                 "reason=deeprepo-test").returncode == 0
        status = wait_state(slurm_backend, jid, DONE)
    finally:
        slurm_cluster.run("scontrol", "update", "nodename=localhost", "state=resume")
    assert status.state is JobState.FAILED and status.node_failure and status.exit_code is None
    assert status.reason == "NODE_FAIL: its node failed, NodeDown"
    failed = slurm_backend.submit(JobSpec(job_id="nf2", command=probe_command([]), env=probe_env(out, exit_code=4)))
    status = wait_state(slurm_backend, failed, DONE, timeout=60)
    assert status.state is JobState.FAILED and not status.node_failure and status.exit_code == 4


def test_hostile_parameters_arrive_as_inert_data(slurm_backend: Backend, work: Path) -> None:
    canary, out = work / "pwned", work / "o.json"
    evil = hostile_values(canary)
    env = probe_env(out, extra={f"DEEPREPO_EVIL_{i}": v for i, v in enumerate(evil)})
    env["DEEPREPO_API_KEY"] = f"'; touch {canary}; echo '"
    workdir = work / "dir with space; `touch x`"
    workdir.mkdir()
    log = work / "logs 100% $(touch x)" / "job.log"
    spec = JobSpec(job_id="evil1", name="evil-name", command=probe_command(evil), env=env,
                   workdir=str(workdir), log_path=str(log))
    jid = slurm_backend.submit(spec)
    assert wait_state(slurm_backend, jid, DONE).state is JobState.SUCCEEDED
    record = wait_file(out)
    assert record["argv"] == evil
    assert record["env"] == {k: v for k, v in env.items() if k.startswith("DEEPREPO_")}
    assert record["cwd"] == str(workdir)
    assert "probe done" in log.read_text() and "probe done" in slurm_backend.logs(jid)
    assert not canary.exists() and not (work / "x").exists()


@pytest.mark.parametrize(
    "resources",
    [
        {"partition": "debug --wrap=id"},
        {"partition": "debug\n#SBATCH --uid=0"},
        {"account": "a;b"},
        {"time_limit": "1:00 --uid=0"},
        {"mem": "4G,gres=gpu:8"},
        {"gpus": "1 --exclusive"},
        {"cpus": -1},
    ],
)
def test_sbatch_options_are_validated(resources: dict[str, object]) -> None:
    with pytest.raises(BackendError) as e:
        Resources(**resources)  # type: ignore[arg-type]
    assert e.value.permanent


def test_sbatch_options_from_resources(slurm_backend: Backend) -> None:
    spec = JobSpec(job_id="o1", command="true", resources=Resources(
        partition="gpu", gpus=2, cpus=8, mem="64G", time_limit="1-00:00:00", account="lab"))
    opts = slurm_backend.sbatch_options(spec, "x.log")  # type: ignore[attr-defined]
    assert {"--partition=gpu", "--gres=gpu:2", "--cpus-per-task=8", "--mem=64G", "--time=1-00:00:00",
            "--account=lab"} <= set(opts)


def test_rejected_partition_is_permanent(slurm_backend: Backend) -> None:
    with pytest.raises(BackendError) as e:
        slurm_backend.submit(JobSpec(job_id="p1", command="true", resources=Resources(partition="nosuchpart")))
    assert e.value.permanent and "partition" in e.value.message.lower()


def test_job_unknown_to_slurm_falls_back_to_exit_file_or_lost(slurm_backend: Backend, work: Path) -> None:
    assert slurm_backend.state("987654").state is JobState.LOST
    state_dir = work / "state"
    state_dir.mkdir(exist_ok=True)
    (state_dir / "987655.exit").write_text("7\n")
    status = slurm_backend.state("987655")
    assert (status.state, status.exit_code) == (JobState.FAILED, 7)


def test_controller_down_is_transient(slurm_cluster: SlurmCluster, work: Path) -> None:
    # A config pointing at a port where no slurmctld listens: the controller is "down".
    conf = work / "slurm.conf"
    text = slurm_cluster.conf.read_text()
    conf.write_text("\n".join(
        "SlurmctldPort=1" if line.startswith("SlurmctldPort=") else line for line in text.splitlines())
        + "\nMessageTimeout=1\n")  # the client retries for a while; keep the test short
    b = backend_for("slurm", {"slurm_conf": str(conf), "state_dir": str(work), "command_timeout": 30}, {})
    with pytest.raises(BackendError) as e:
        b.state("1")
    assert not e.value.permanent and "controller" in e.value.message


def test_bad_job_id_is_refused(slurm_backend: Backend) -> None:
    with pytest.raises(BackendError):
        slurm_backend.state("1; scancel -u root")


def test_sbatch_missing_is_permanent(work: Path) -> None:
    b = backend_for("slurm", {"bin_dir": str(work / "nobin"), "state_dir": str(work)}, {})
    with pytest.raises(BackendError) as e:
        b.submit(JobSpec(job_id="m1", command="true"))
    assert e.value.permanent and "not found" in e.value.message


def test_squeue_is_really_there() -> None:
    # Guards against silently testing nothing: the binaries the fixtures rely on exist.
    assert subprocess.run(["which", "sbatch"], capture_output=True).returncode == 0


def test_resources_are_checked_against_what_sinfo_reports(slurm_backend: Backend) -> None:
    from workers.backends.slurm import gres_gpus

    slurm_backend.check_resources(Resources(partition="debug", nodes=1))  # what the test cluster has
    for res, said in (
        (Resources(partition="gpu-a100"), "partition 'gpu-a100' does not exist on this cluster (sinfo lists: debug)"),
        (Resources(gpus=2), "2 GPUs per node asked, but no node of partition 'debug' has more than 0 (sinfo GRES)"),
        (Resources(partition="debug", nodes=3), "3 nodes asked, but partition 'debug' has 1"),
    ):
        with pytest.raises(BackendError) as e:
            slurm_backend.check_resources(res)
        assert e.value.permanent and e.value.message == said
    assert [gres_gpus(g) for g in ("(null)", "gpu:4", "gpu:a100:8(S:0-1)", "gpu:a100:2,gpu:v100:1,shard:8")] == \
        [0, 4, 8, 3]


def test_nodes_and_gpus_become_sbatch_options(slurm_backend: Backend) -> None:
    spec = JobSpec(job_id="opts", command="true", resources=Resources(nodes=2, gpus=4, time_limit="1-00:00:00",
                                                                       partition="debug"))
    opts = slurm_backend.sbatch_options(spec, "/tmp/x.log")  # type: ignore[attr-defined]
    assert {"--nodes=2", "--gres=gpu:4", "--time=1-00:00:00", "--partition=debug"} <= set(opts)
