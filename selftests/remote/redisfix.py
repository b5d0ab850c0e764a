# SPDX-License-Identifier: GPL-2.0
"""Redis processes of the test's own on 127.0.0.1: a single server, or a
cluster of masters and replicas made with ``redis-cli --cluster create``.

Every cluster node is reached by clients through a TCP proxy of the test
(the node announces the proxy's port: cluster-announce-port), while the
nodes talk to each other directly on their bus ports.  So a test can
close one node's port to its clients - a partition between the clients
and that node, which the cluster itself does not see - or make it slow,
and open it again, without root or a firewall.
"""

import os
import shutil
import signal
import socket
import subprocess
import threading
import time


def free_ports(n):
    """n TCP ports free on 127.0.0.1 now, each with port + 10000 free too
    (a cluster node's bus port)."""
    ports, socks = [], []
    while len(ports) < n:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
        socks.append(s)
        if p + 10000 > 65535 or p in ports:
            continue
        b = socket.socket()
        try:
            b.bind(("127.0.0.1", p + 10000))
        except OSError:
            b.close()
            continue
        socks.append(b)
        ports.append(p)
    for s in socks:
        s.close()
    return ports


def crc16(b):
    crc = 0
    for x in b:
        crc ^= x << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xffff
    return crc


def key_slot(key):
    """The cluster's slot of @key (a str): its {hash tag}'s, if any."""
    s = key.find("{")
    if s >= 0:
        e = key.find("}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return crc16(key.encode()) & 16383


def resp(port, *args, timeout=10):
    """One command to 127.0.0.1:@port in RESP; the reply: bytes, int,
    None, a list, or RespError.  Binary-safe, unlike redis-cli's output."""
    req = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        req += b"$%d\r\n%s\r\n" % (len(a), a)
    with socket.create_connection(("127.0.0.1", port), timeout) as s:
        s.sendall(req)
        f = s.makefile("rb")
        return _reply(f)


class RespError(Exception):
    pass


def _reply(f):
    line = f.readline()
    if not line:
        raise OSError("connection closed")
    t, rest = line[:1], line[1:-2]
    if t == b"+":
        return rest
    if t == b"-":
        return RespError(rest.decode())
    if t == b":":
        return int(rest)
    if t == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2]
    if t == b"*":
        n = int(rest)
        return None if n < 0 else [_reply(f) for _ in range(n)]
    raise OSError("not RESP: %r" % line)


def need(prog):
    path = shutil.which(prog) or (os.path.exists("/usr/bin/" + prog) and
                                  "/usr/bin/" + prog)
    if not path:
        raise SystemExit("%s not found (apt-get install redis-server redis-tools)"
                         % prog)
    return path


class Proxy:
    """127.0.0.1:port -> 127.0.0.1:target, one thread pair a connection.
    close() takes the listener away (a connect is refused) and ends every
    connection; open() listens again; delay_ms holds each chunk that
    long."""

    def __init__(self, port, target):
        self.port, self.target = port, target
        self.delay_ms = 0
        self.lock = threading.Lock()
        self.conns = []
        self.lsock = None
        self.open()

    def open(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        self.lsock = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def close(self):
        """Close the port: no listener, every connection reset."""
        s, self.lsock = self.lsock, None
        if s:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        with self.lock:
            conns, self.conns = self.conns, []
        # shutdown() first: close() alone would leave a socket that
        # another thread is in recv() on open.
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def _accept(self, s):
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.target), 2)
            except OSError:
                c.close()
                continue
            u.settimeout(None)
            for x in (c, u):
                x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.conns += [c, u]
            threading.Thread(target=self._pump, args=(c, u), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c), daemon=True).start()

    def _pump(self, a, b):
        try:
            while True:
                d = a.recv(1 << 16)
                if not d:
                    break
                if self.delay_ms:
                    time.sleep(self.delay_ms / 1000)
                b.sendall(d)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Server:
    def __init__(self, workdir, port, cluster=False, announce=None, extra=(),
                 node_timeout=1000):
        self.port = port
        self.dir = os.path.join(workdir, str(port))
        os.makedirs(self.dir, exist_ok=True)
        args = [need("redis-server"), "--port", str(port),
                "--bind", "127.0.0.1", "--dir", self.dir, "--save", "",
                "--appendonly", "no", "--daemonize", "no",
                "--logfile", os.path.join(self.dir, "log")]
        if cluster:
            args += ["--cluster-enabled", "yes",
                     "--cluster-config-file", "nodes.conf",
                     "--cluster-node-timeout", str(node_timeout),
                     "--cluster-announce-ip", "127.0.0.1",
                     "--cluster-announce-bus-port", str(port + 10000),
                     "--repl-diskless-sync-delay", "0",
                     "--repl-timeout", "5"]
            if announce:
                args += ["--cluster-announce-port", str(announce)]
        args += list(extra)
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if self.cli("PING").strip() == "PONG":
                    return
            except subprocess.CalledProcessError:
                pass
            time.sleep(0.05)
        raise RuntimeError("redis-server on %d did not start: %s" %
                           (port, self.log()))

    def cli(self, *args):
        return subprocess.run([need("redis-cli"), "-p", str(self.port)] +
                              [str(a) for a in args], check=True,
                              capture_output=True, text=True,
                              timeout=10).stdout

    def log(self):
        try:
            with open(os.path.join(self.dir, "log")) as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()


class Cluster:
    """masters masters, each with one replica, behind proxies: seeds()
    names the proxies, as a client configures them."""

    def __init__(self, workdir, masters=3, replicas=1, node_timeout=1000):
        n = masters * (1 + replicas)
        ports = free_ports(2 * n)
        self.real, self.pub = ports[:n], ports[n:]
        self.proxies = [Proxy(p, r) for p, r in zip(self.pub, self.real)]
        self.servers = [Server(workdir, r, cluster=True, announce=p,
                               node_timeout=node_timeout)
                        for r, p in zip(self.real, self.pub)]
        subprocess.run([need("redis-cli"), "--cluster", "create"] +
                       ["127.0.0.1:%d" % p for p in self.real] +
                       ["--cluster-replicas", str(replicas), "--cluster-yes"],
                       check=True, capture_output=True, text=True, timeout=60)
        self.wait_ok()

    def seeds(self):
        return ",".join("127.0.0.1:%d" % p for p in self.pub)

    def by_pub(self, pub):
        return self.servers[self.pub.index(pub)]

    def proxy(self, pub):
        return self.proxies[self.pub.index(pub)]

    def nodes(self):
        """[(pub_port, role, node_id, slots, master_id)] from a live
        node's view (master_id "-" for a master)."""
        for s in self.servers:
            if not s.alive():
                continue
            try:
                out = s.cli("CLUSTER", "NODES")
            except subprocess.CalledProcessError:
                continue
            rows = []
            for line in out.splitlines():
                f = line.split()
                port = int(f[1].split("@")[0].rsplit(":", 1)[1])
                role = "master" if "master" in f[2] else "replica"
                if "fail" in f[2]:
                    role += ",fail"
                rows.append((port, role, f[0], f[8:], f[3]))
            return rows
        return []

    def slot_owners(self):
        """slot -> the public port of the master that serves it now."""
        owners = {}
        for port, role, _, slots, _ in self.nodes():
            if not role.startswith("master"):
                continue
            for rng in slots:
                if rng.startswith("["):
                    continue
                a, _, b = rng.partition("-")
                for slot in range(int(a), int(b or a) + 1):
                    owners[slot] = port
        return owners

    def owner(self, key):
        """The public port of the master that serves @key now."""
        return self.slot_owners().get(key_slot(key))

    def call(self, *args):
        """A command on the master of its key (args[1]), as a client
        would send it."""
        return resp(self.owner(args[1]), *args)

    def masters(self):
        return [r[0] for r in self.nodes()
                if r[1] == "master" and r[3]]

    def wait_ok(self, timeout=30, masters=None):
        deadline = time.time() + timeout
        while time.time() < deadline:
            good = True
            for s in self.servers:
                if not s.alive():
                    continue
                try:
                    info = s.cli("CLUSTER", "INFO")
                except subprocess.CalledProcessError:
                    good = False
                    break
                if "cluster_state:ok" not in info:
                    good = False
                    break
            if good and (masters is None or len(self.masters()) == masters):
                return
            time.sleep(0.1)
        raise RuntimeError("the cluster did not come to cluster_state:ok")

    def replicate(self, timeout=20):
        """Wait until every master's writes are on its replicas (replicas
        reach their masters through the proxies too, so a closed port
        breaks the link until the replica makes it again)."""
        def info(port, field):
            for line in self.by_pub(port).cli("INFO", "replication").splitlines():
                if line.startswith(field + ":"):
                    return line.split(":", 1)[1].strip()
            return None

        deadline = time.time() + timeout
        rows = self.nodes()
        for m in rows:
            if m[1] != "master" or not m[3]:
                continue
            want = int(info(m[0], "master_repl_offset"))
            for r in rows:
                if r[1] != "replica" or r[4] != m[2]:
                    continue
                while not (info(r[0], "master_link_status") == "up" and
                           int(info(r[0], "slave_repl_offset") or 0) >= want):
                    if time.time() > deadline:
                        raise RuntimeError("the replica %d of %d is not in step"
                                           % (r[0], m[0]))
                    time.sleep(0.1)

    def stop(self):
        for p in self.proxies:
            p.close()
        for s in self.servers:
            s.stop()
