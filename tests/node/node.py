"""One real Kubernetes node on this machine, for `make e2e-node`: etcd, the API
server, controller manager and scheduler on loopback (injector/scripts/cluster.py
makes the PKI and talks REST), containerd and a kubelet on the default-route
address, the bridge CNI plugin. Everything lives under one work directory; `stop`
ends every process started here by its PID and undoes what was set up on the host
(the bridge, mounts under the work directory, the CNI network namespaces, the
cgroups under its own cgroup root, iptables chains that were not there before, the kernel settings
the kubelet changes). Nothing here builds or fetches a binary: their paths are given.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import cluster as k8s

BRIDGE = "tandemnode0"
SUBNET = "10.244.78.0/24"
NODE_NAME = "tandem-e2e-node"
# What the kubelet sets when protectKernelDefaults is false: put back at the end.
SYSCTLS = ["vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
           "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"]
CGROUP_ROOT = Path("/sys/fs/cgroup")
# The kubelet's cgroup root: this node's Pods under a name of its own, never under
# another kubelet's /kubepods.
POD_CGROUPS = "tandem-e2e-node"


def default_route_address():
    """The address of the interface of the default route (the kubelet refuses loopback)."""
    out = subprocess.run(["ip", "-4", "-j", "route", "get", "1.1.1.1"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)[0]["prefsrc"]


def chains():
    """{table: set of chains} of iptables now."""
    out = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    found, table = {}, None
    for line in out.splitlines():
        if line.startswith("*"):
            table = line[1:]
            found[table] = set()
        elif line.startswith(":") and table:
            found[table].add(line[1:].split()[0])
    return found


def containerd_config(work, sandbox_image, version):
    """containerd's configuration: its own root, state and socket under WORK;
    runc with cgroupfs; restrict_oom_score_adj (no CAP_SYS_RESOURCE here); the
    bridge CNI; registries configured per host under certs.d. VERSION 2 for 1.x,
    3 for 2.x."""
    d = work / "containerd"
    common = (f'root = "{d}/root"\nstate = "{d}/state"\n'
              f'[grpc]\n  address = "{d}/containerd.sock"\n'
              f'[plugins."io.containerd.internal.v1.opt"]\n  path = "{d}/opt"\n')
    cni = f'bin_dir = "/usr/lib/cni"\nconf_dir = "{work}/cni/net.d"\n'
    runc = ('runtime_type = "io.containerd.runc.v2"\n'
            '[RUNC.options]\n  SystemdCgroup = false\n')
    if version == 2:
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        return ("version = 2\n" + common +
                f'[{cri}]\n  sandbox_image = "{sandbox_image}"\n  restrict_oom_score_adj = true\n'
                f'[{cri}.containerd]\n  snapshotter = "overlayfs"\n  default_runtime_name = "runc"\n'
                f'[{cri}.containerd.runtimes.runc]\n' +
                runc.replace("RUNC", f"{cri}.containerd.runtimes.runc") +
                f'[{cri}.cni]\n' + cni +
                f'[{cri}.registry]\n  config_path = "{d}/certs.d"\n')
    rt = 'plugins."io.containerd.cri.v1.runtime"'
    img = 'plugins."io.containerd.cri.v1.images"'
    return ("version = 3\n" + common +
            f'[{rt}]\n  restrict_oom_score_adj = true\n'
            f'[{rt}.containerd]\n  default_runtime_name = "runc"\n'
            f'[{rt}.containerd.runtimes.runc]\n' +
            runc.replace("RUNC", f"{rt}.containerd.runtimes.runc") +
            f'[{rt}.cni]\n' + cni.replace('bin_dir = "/usr/lib/cni"', 'bin_dirs = ["/usr/lib/cni"]') +
            # NRI's socket is a fixed host path: not this node's to take.
            '[plugins."io.containerd.nri.v1.nri"]\n  disable = true\n' +
            f'[{img}]\n  snapshotter = "overlayfs"\n'
            f'[{img}.pinned_images]\n  sandbox = "{sandbox_image}"\n'
            f'[{img}.registry]\n  config_path = "{d}/certs.d"\n')


def cni_config(work):
    return json.dumps({
        "cniVersion": "1.0.0", "name": "tandem-e2e",
        "plugins": [
            {"type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": SUBNET}]],
                      "dataDir": str(work / "cni" / "ipam")}},
            {"type": "loopback"},
        ],
    })


def kubelet_config(work, address, port, sock):
    return json.dumps({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "failCgroupV1": False, "cgroupDriver": "cgroupfs", "makeIPTablesUtilChains": False,
        "address": address, "port": port, "readOnlyPort": 0, "healthzPort": 0,
        "containerRuntimeEndpoint": f"unix://{sock}",
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "failSwapOn": False, "serializeImagePulls": False,
        "clusterDomain": "cluster.local", "resolvConf": "/etc/resolv.conf",
        # A shared build machine's disks are full of others' files: no evictions.
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "0%",
                         "imagefs.available": "0%", "nodefs.inodesFree": "0%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "syncFrequency": "5s", "fileCheckFrequency": "5s",
        "nodeStatusUpdateFrequency": "5s", "podPidsLimit": -1,
        "cgroupRoot": f"/{POD_CGROUPS}",
    })


class Node:
    """The control plane, containerd and the kubelet; `stop()` undoes everything."""

    def __init__(self, bins, work, containerd_dir, say):
        self.bins, self.work, self.say = bins, Path(work), say
        self.containerd_dir = containerd_dir
        self.procs = []
        self.api = None
        self.before = {"chains": chains(), "sysctls": {}, "netns": self._netns()}
        for key in SYSCTLS:
            try:
                self.before["sysctls"][key] = (Path("/proc/sys") / key).read_text().strip()
            except OSError:
                pass
        self.address = default_route_address()

    @staticmethod
    def _netns():
        path = Path("/run/netns")
        return set(os.listdir(path)) if path.exists() else set()

    def containerd_bin(self, name):
        if self.containerd_dir:
            for sub in ("", "bin"):
                path = Path(self.containerd_dir) / sub / name
                if path.exists():
                    return str(path)
        return shutil.which(name) or name

    def ctr(self, *args, check=True, **kw):
        """`ctr -n k8s.io ARGS` against this node's containerd."""
        sock = self.work / "containerd" / "containerd.sock"
        return subprocess.run([self.containerd_bin("ctr"), "-a", str(sock), "-n", "k8s.io", *args],
                              capture_output=True, text=True, check=check, **kw)

    def _start(self, name, argv, env=None):
        log = open(self.work / f"{name}.log", "wb")
        try:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    env=env)
        finally:
            log.close()
        self.procs.append((name, proc))
        return proc

    def version(self, name):
        out = subprocess.run([self.containerd_bin(name) if name.startswith("containerd")
                              else self.bins[name], "--version"],
                             capture_output=True, text=True)
        return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else "?"

    def share_netns_dir(self):
        """/run/netns made a shared mount point of itself, as `ip netns` and podman
        make it, before containerd mounts a Pod's network namespace there: else a
        podman started meanwhile bind-mounts the directory over them, and the
        kubelet can no longer remove one (unlinkat: device or resource busy)."""
        self.netns_mount = False
        if not os.path.ismount("/run/netns"):
            os.makedirs("/run/netns", exist_ok=True)
            subprocess.run(["mount", "--bind", "/run/netns", "/run/netns"], check=True)
            subprocess.run(["mount", "--make-shared", "/run/netns"], check=True)
            self.netns_mount = True

    def start_containerd(self, sandbox_image):
        self.share_netns_dir()
        d = self.work / "containerd"
        (d / "certs.d").mkdir(parents=True, exist_ok=True)
        (self.work / "cni" / "net.d").mkdir(parents=True, exist_ok=True)
        (self.work / "cni" / "net.d" / "10-tandem.conflist").write_text(cni_config(self.work))
        major = 2 if "v1." in self.version("containerd") or " 1." in self.version("containerd") else 3
        (d / "config.toml").write_text(containerd_config(self.work, sandbox_image, major))
        env = dict(os.environ)
        if self.containerd_dir:
            # The shim is found on PATH beside containerd.
            env["PATH"] = f"{Path(self.containerd_bin('containerd')).parent}:{env['PATH']}"
        proc = self._start("containerd", [self.containerd_bin("containerd"), "--config",
                                          str(d / "config.toml")], env=env)
        sock = d / "containerd.sock"
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise k8s.Failed(f"containerd exited {proc.returncode}: {self.tail('containerd')}")
            if sock.exists() and self.ctr("version", check=False).returncode == 0:
                return
            time.sleep(0.3)
        raise k8s.Failed(f"containerd did not answer: {self.tail('containerd')}")

    def tail(self, name, lines=20):
        path = self.work / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return f"{path}: ...\n" + "\n".join(text.splitlines()[-lines:])

    def start_control_plane(self):
        """etcd and the API server (cluster.py), then the controller manager and scheduler."""
        self.api = ControlPlane(self.bins, self.work / "control-plane", self.say)
        return self.api

    def start_kubelet(self):
        for controller in self._controllers():
            (controller / POD_CGROUPS).mkdir(exist_ok=True)
        d = self.work / "kubelet"
        d.mkdir(parents=True, exist_ok=True)
        port = k8s.free_port()
        sock = self.work / "containerd" / "containerd.sock"
        (d / "config.json").write_text(kubelet_config(self.work, self.address, port, sock))
        self._start("kubelet", [
            self.bins["kubelet"], f"--config={d / 'config.json'}",
            f"--kubeconfig={self.api.kubeconfig()}", f"--root-dir={d / 'root'}",
            f"--cert-dir={d / 'pki'}", f"--node-ip={self.address}",
            f"--hostname-override={NODE_NAME}", "--v=2",
        ])
        end = time.monotonic() + 120
        last = ""
        while time.monotonic() < end:
            for name, proc in self.procs:
                if proc.poll() is not None:
                    raise k8s.Failed(f"{name} exited {proc.returncode}: {self.tail(name)}")
            status, _, node = self.api.call("GET", f"/api/v1/nodes/{NODE_NAME}")
            if status == 200:
                ready = [c for c in node["status"].get("conditions", []) if c["type"] == "Ready"]
                if ready and ready[0]["status"] == "True":
                    return self._untaint(node)
                last = ready[0]["message"] if ready else "no Ready condition"
            time.sleep(1)
        raise k8s.Failed(f"the node was not Ready within 120 s ({last}): {self.tail('kubelet')}")

    def _untaint(self, node):
        """The kubelet registers with the not-ready taint; the node lifecycle
        controller (not run here: it would also evict) takes it off once Ready."""
        node["spec"].pop("taints", None)
        self.api.must("PUT", f"/api/v1/nodes/{NODE_NAME}", node)
        return node

    def drain(self, bound=45):
        """Deletes every Pod at once and waits until the kubelet has torn down their
        sandboxes (their network namespaces with them)."""
        status, _, found = self.api.call("GET", "/api/v1/pods")
        if status != 200:
            return
        for pod in found["items"]:
            meta = pod["metadata"]
            self.api.call("DELETE", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                          {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
        end = time.monotonic() + bound
        while time.monotonic() < end:
            tasks = self.ctr("tasks", "ls", check=False).stdout.splitlines()[1:]
            if not any("RUNNING" in t.split() for t in tasks):
                return
            time.sleep(1)
        self.say(f"the kubelet left containers after {bound}s; containerd's are killed")

    def stop(self):
        """Every process by PID (kubelet first, containerd's shims by the socket they
        serve), then what they left on the host."""
        kubelet = next((p for n, p in self.procs if n == "kubelet"), None)
        if self.api and kubelet and kubelet.poll() is None:
            try:
                self.drain()
            except (OSError, k8s.Failed) as e:
                self.say(f"draining the node: {e}")
        for name, proc in reversed(self.procs):
            if name == "containerd":
                self._stop_containers()
            self._end(proc)
        self._end_shims()
        if self.api:
            self.api.stop()
        self._unmount()
        for ns in self._netns() - self.before["netns"]:
            if ns.startswith("cni-"):
                subprocess.run(["umount", "-l", f"/run/netns/{ns}"], capture_output=True)
                try:
                    Path(f"/run/netns/{ns}").unlink(missing_ok=True)
                except OSError as e:
                    self.say(f"/run/netns/{ns}: {e}")
        if getattr(self, "netns_mount", False):
            # Not lazily: a namespace another program mounted there since keeps it.
            subprocess.run(["umount", "/run/netns"], capture_output=True)
        subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True)
        self._remove_cgroups()
        self._remove_chains()
        for key, value in self.before["sysctls"].items():
            try:
                (Path("/proc/sys") / key).write_text(value)
            except OSError:
                pass

    @staticmethod
    def _end(proc, grace=20):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _stop_containers(self):
        """The containers still running when the kubelet is gone: killed through containerd."""
        out = self.ctr("tasks", "ls", "-q", check=False).stdout.split()
        for task in out:
            self.ctr("tasks", "kill", "-s", "SIGKILL", task, check=False)
        time.sleep(1 if out else 0)
        for task in out:
            self.ctr("tasks", "rm", "-f", task, check=False)
        for c in self.ctr("containers", "ls", "-q", check=False).stdout.split():
            self.ctr("containers", "rm", c, check=False)

    def _end_shims(self):
        """Shims serve this node's containerd (their command line names its socket or state)."""
        mine = str(self.work / "containerd")
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if "containerd-shim" in cmd and mine in cmd:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _unmount(self):
        """Every mount under the work directory, deepest first."""
        for _ in range(3):
            mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
            mine = sorted((m for m in mounts if m.startswith(str(self.work))), key=len, reverse=True)
            if not mine:
                return
            for m in mine:
                subprocess.run(["umount", "-l", m], capture_output=True)

    @staticmethod
    def _controllers():
        """The cgroup v1 hierarchies (or the one v2 hierarchy)."""
        if (CGROUP_ROOT / "cgroup.controllers").exists():
            return [CGROUP_ROOT]
        return [c for c in CGROUP_ROOT.iterdir() if c.is_dir() and not c.is_symlink()]

    def _remove_cgroups(self):
        """This node's cgroup root (kubepods, the QoS and Pod cgroups under it)."""
        for controller in self._controllers():
            top = controller / POD_CGROUPS
            if not top.is_dir():
                continue
            dirs = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts),
                          reverse=True)
            for p in dirs + [top]:
                try:
                    p.rmdir()
                except OSError:
                    pass

    def _remove_chains(self):
        """iptables chains that were not there before this run (CNI's, the kubelet's)."""
        now = chains()
        for table, names in now.items():
            for chain in names - self.before["chains"].get(table, set()):
                subprocess.run(["iptables", "-t", table, "-F", chain], capture_output=True)
        for table, names in now.items():
            for chain in names - self.before["chains"].get(table, set()):
                subprocess.run(["iptables", "-t", table, "-X", chain], capture_output=True)

    def leftovers(self):
        """What of this run is still on the host (should be nothing after stop)."""
        left = []
        if subprocess.run(["ip", "link", "show", BRIDGE], capture_output=True).returncode == 0:
            left.append(f"bridge {BRIDGE}")
        mounts = Path("/proc/mounts").read_text()
        if str(self.work) in mounts:
            left.append("mounts under the work directory")
        netns = {n for n in self._netns() - self.before["netns"] if n.startswith("cni-")}
        if netns:
            left.append(f"network namespaces {', '.join(sorted(netns))}")
        if any((c / POD_CGROUPS).exists() for c in self._controllers()):
            left.append(f"cgroups under /{POD_CGROUPS}")
        for name, proc in self.procs:
            if proc.poll() is None:
                left.append(f"{name} (pid {proc.pid})")
        return left


class ControlPlane(k8s.Cluster):
    """cluster.Cluster with what a node needs: the API server reaches the kubelet
    by its InternalIP (`kubectl logs`) and a Service by its endpoints, and the
    controller manager (Deployments' controllers and EndpointSlices too, for the
    chart) and scheduler."""

    def __init__(self, bins, dir, say):
        super().__init__(
            bins["kube-apiserver"], bins["etcd"], dir, bins["kube-controller-manager"],
            # The chart's webhook is called through its Service: with no kube-proxy
            # here, the API server picks one of its endpoints (a Pod's IP on the
            # bridge) itself.
            apiserver_args=["--kubelet-preferred-address-types=InternalIP",
                            "--enable-aggregator-routing=true"],
            controllers="job,cronjob,serviceaccount,serviceaccount-token,namespace,"
                        "garbagecollector,ttl-after-finished,podgc,root-ca-cert-publisher,"
                        "deployment,replicaset,endpointslice,disruption")
        config = self.kubeconfig()
        self._start("kube-scheduler", [
            bins["kube-scheduler"], f"--kubeconfig={config}",
            f"--authentication-kubeconfig={config}", f"--authorization-kubeconfig={config}",
            "--bind-address=127.0.0.1", f"--secure-port={k8s.free_port()}",
            "--leader-elect=false",
        ])
