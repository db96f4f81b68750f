"""A real Slurm cluster on this machine for the tests: Debian's slurmctld and two slurmd (22.05) with munge.

`Cluster.start(directory)` installs the packages when they are missing and this runs as root (apt-get,
--no-install-recommends: about 17 s and 3.5 MB), writes a slurm.conf into `directory` (SLURM_CONF), starts munged
if none runs, slurmctld, and two slurmd named after this host and `localhost` (both resolve, which the sbatch
scripts need: the first node's name is the rendezvous host), and waits for both nodes to be idle (about 1.5 s).
`stop()` kills what it started, by PID, and waits until it has exited. Facts this relies on, measured here: two
slurmd on one host need ONE NodeName line with both names, the real hostname first (two lines, or `localhost`
first, die with "Duplicated NodeHostName"); no cgroups (proctrack/linuxproc, task/none); munged runs as the munge
user from /run/munge. A requeued job waits for the credential lifetime before it starts again
(AuthInfo=cred_expire: 120 s by default, 5 s here) and then for a scheduling pass (sched_interval and
bf_interval: 2 s and 1 s here).
"""

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
BINARIES = ("slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "munged")


class Unavailable(Exception):
    """Slurm cannot run here (no packages and no way to install them): the one line a skip shows."""


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _consecutive_free_ports():
    """Two free consecutive ports for the slurmd pair (slurm.conf's Port=[a-b])."""
    for _ in range(50):
        (port,) = _free_ports(1)
        if port < 65535:
            try:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port + 1))
                return port, port + 1
            except OSError:
                continue
    raise Unavailable("no two consecutive free ports for slurmd")


def install():
    missing = [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise Unavailable(
            f"Slurm is not installed ({', '.join(missing)} missing) and this is not root with apt-get"
        )
    proc = subprocess.run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES],
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise Unavailable(
            f"apt-get could not install {' '.join(PACKAGES)}: {proc.stderr.strip()[-200:]}"
        )


def _alive(pid):
    """Whether `pid` runs: a zombie, which no one here may reap, has exited."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _run(*cmd, env=None, check=True, cwd=None):
    proc = subprocess.run(
        list(map(str, cmd)), env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(map(str, cmd))}: exit {proc.returncode}: {proc.stderr.strip()[-400:]}"
        )
    return proc.stdout


class Cluster:
    def __init__(self, directory):
        self.dir = Path(directory)
        self.host = socket.gethostname()
        self.env = {**os.environ, "SLURM_CONF": str(self.dir / "slurm.conf")}
        self.pids = []

    def start(self):
        install()
        sbin = lambda name: shutil.which(name) or f"/usr/sbin/{name}"  # noqa: E731
        self._munge(sbin("munged"))
        (ctld_port,) = _free_ports(1)
        first, last = _consecutive_free_ports()
        (self.dir / "state").mkdir(parents=True, exist_ok=True)
        d = self.dir
        (d / "slurm.conf").write_text(
            f"""ClusterName=ladder
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=cred_expire=5
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool-%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=1
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
NodeName={self.host},localhost NodeHostname={self.host} NodeAddr=127.0.0.1 Port=[{first}-{last}] CPUs=1
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
        )
        _run(sbin("slurmctld"), env=self.env)
        self.pids.append(self._pid("slurmctld.pid"))
        for name in (self.host, "localhost"):
            _run(sbin("slurmd"), "-N", name, env=self.env)
            self.pids.append(self._pid(f"slurmd-{name}.pid"))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.idle():
                return self
            time.sleep(0.2)
        raise RuntimeError(f"the two nodes did not become idle; see {d}/slurmctld.log")

    def _pid(self, name, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                return int((self.dir / name).read_text())
            except (OSError, ValueError):
                time.sleep(0.05)
        raise RuntimeError(f"{name} was not written: see the logs in {self.dir}")

    def _munge(self, munged):
        if subprocess.run(["munge", "-n"], capture_output=True, timeout=60).returncode == 0:
            return  # a munged runs already
        subprocess.run(
            ["install", "-d", "-o", "munge", "-g", "munge", "-m", "755", "/run/munge"],
            check=True,
            timeout=60,
        )
        _run("runuser", "-u", "munge", "--", munged)
        try:
            self.pids.append(int(Path("/run/munge/munged.pid").read_text()))
        except (OSError, ValueError):
            pass

    def stop(self, timeout=15):
        """SIGTERM to what it started, then wait until each has exited: a cluster started next in this session
        asks `munge -n` whether a munged runs, and a munged still exiting answers yes, then takes its socket
        with it (test_slurm's fourth test failed so in two clean runs, its module's fixture set up twice)."""
        for pid in reversed(self.pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        for pid in self.pids:
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)

    # -- what the tests do with it ---------------------------------------------------------------------------

    def sbatch(self, *args, cwd, env=None):
        out = _run(
            "sbatch", "--parsable", *args, env={**self.env, **(env or {})} if env else self.env
        )
        return int(out.strip().split(";")[0])

    def state(self, job):
        """(state, reason, restarts) of a job, from scontrol."""
        text = _run("scontrol", "show", "job", job, env=self.env)
        fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
        return fields["JobState"], fields.get("Reason"), int(fields.get("Restarts", 0))

    def idle(self):
        return (
            _run("sinfo", "-h", "-N", "-o", "%T", env=self.env, check=False).split() == ["idle"] * 2
        )

    def wait(self, job, until, timeout=180):
        """Poll until `until(state)`. A requeued job starts again after the credential lifetime (slurm.conf's
        AuthInfo=cred_expire, 5 s here, 120 s by default): forcing an earlier StartTime made slurmd kill the
        new start ("Job credential revoked": the old start's credential was still revoked on the node)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state, reason, restarts = self.state(job)
            if until(state):
                return state, restarts
            time.sleep(0.25)
        raise AssertionError(f"job {job} still {state} ({reason}) after {timeout} s")
