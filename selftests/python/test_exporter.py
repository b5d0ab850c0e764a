# SPDX-License-Identifier: GPL-2.0
"""kvarenactl exporter, in the VM, against kvarena.ko and kvarenactl as
installed (vm_installed.sh runs it as root after modprobe kvarena), read
by Prometheus's own tools (Debian's prometheus package, carried into the
VM's root):

 - GET /metrics answers the text format with the arena's figures and the
   clients summed per label (--per-client: one series per client), HEAD,
   other paths and methods get what HTTP says;
 - `promtool check metrics` finds nothing to say about what is served,
   nor about `kvarenactl metrics`;
 - a real prometheus scrapes it, and a PromQL query (promtool query
   instant) returns the frames a known client holds;
 - a scrape that cannot read the device answers kvarena_up 0 and the
   exporter says why once, and again when it is back; -n COUNT and
   SIGTERM end it; a port in use is a clear error;
 - an exporter run by a member of group kvarena sees only its own cache
   domain's clients; one run by a user outside the group does not start.
"""

import atexit
import http.client
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import kvarena
import ktap
from ktap import eq

suite = ktap.Suite("python_exporter")
KVARENACTL = "kvarenactl"
ARENA = "prom"
FRAMES = 32
KVUSER, KVGROUP, OTHER = 1000, 990, 1001
clients = []


def setup():
    kvarena.create_arena(ARENA, nr_frames=FRAMES, frame_size=1 << 20)
    # serve-a holds 5 frames; serve-b is two clients, 2 + 3.
    for label, n in (("serve-a", 5), ("serve-b", 2), ("serve-b", 3)):
        a = kvarena.open(ARENA, mode="device", label=label)
        a.alloc(n)
        clients.append(a)


def start(*args, env=None, **kw):
    """An exporter on a port of the kernel's choice; (process, port)."""
    p = subprocess.Popen([KVARENACTL, "exporter", "--listen", "127.0.0.1:0",
                          *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, **kw)
    line = p.stdout.readline()
    m = re.match(r"kvarenactl exporter: serving http://127\.0\.0\.1:(\d+)/metrics$",
                 line.rstrip("\n"))
    if not m:
        p.kill()
        raise AssertionError("exporter said %r, stderr %r" %
                             (line, p.stderr.read()))
    return p, int(m.group(1))


def stop(p):
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    eq(p.returncode, 0, "exit status after SIGTERM (stderr %r)" % err)
    return err


def request(port, path="/metrics", method="GET", body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, body=body)
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data


def samples(text):
    """{'name{labels}': value} of a text exposition."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = int(v)
    return out


def promtool_check(text, what):
    r = subprocess.run(["promtool", "check", "metrics"], input=text,
                       capture_output=True, text=True, timeout=120)
    eq((r.returncode, r.stdout + r.stderr), (0, ""),
       "promtool check metrics on " + what)


def need(tool):
    if not shutil.which(tool):
        raise ktap.Skip("%s is not in this root (Debian's prometheus package on the host)"
                        % tool)


@suite.test
def exporter_serves_the_arenas_and_clients_per_label():
    p, port = start()
    try:
        status, hdr, body = request(port)
        eq(status, 200)
        eq(hdr["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        s = samples(body)
        eq(s["kvarena_up"], 1)
        a = 'arena="%s"' % ARENA
        eq(s['kvarena_frames{%s,state="held"}' % a], 10)
        eq(s['kvarena_client_held_frames{%s,label="serve-a"}' % a], 5)
        eq(s['kvarena_client_held_frames{%s,label="serve-b"}' % a], 5)
        eq(s['kvarena_label_clients{%s,label="serve-b"}' % a], 2)
        eq(s['kvarena_client_alloc_calls_total{%s,label="serve-b"}' % a], 2)
        assert "pid=" not in body and "client=" not in body, body
        # Another scrape reads the arena afresh.
        h = clients[0].alloc(1)
        s = samples(request(port)[2])
        eq(s['kvarena_client_held_frames{%s,label="serve-a"}' % a], 6)
        clients[0].free(h)
    finally:
        stop(p)


@suite.test
def per_client_gives_a_series_per_client():
    p, port = start("--per-client")
    try:
        body = request(port)[2]
        held = [v for k, v in samples(body).items()
                if k.startswith("kvarena_client_held_frames{") and
                'label="serve-b"' in k]
        eq(sorted(held), [2, 3])
        assert 'pid="%d"' % os.getpid() in body, body
        assert "kvarena_label_clients" not in body, body
    finally:
        stop(p)


@suite.test
def promtool_check_metrics_finds_nothing():
    need("promtool")
    for args in ((), ("--per-client",)):
        p, port = start(*args)
        try:
            promtool_check(request(port)[2], "exporter " + " ".join(args))
        finally:
            stop(p)
    for args in ((), ("--by-label",)):
        r = subprocess.run([KVARENACTL, "metrics", *args],
                           capture_output=True, text=True, timeout=60)
        eq(r.returncode, 0)
        promtool_check(r.stdout, "kvarenactl metrics " + " ".join(args))


@suite.test
def http_methods_and_paths():
    p, port = start()
    try:
        status, hdr, body = request(port, method="HEAD")
        eq((status, body), (200, ""))
        status, hdr, body = request(port, method="POST", body="x=1")
        eq(status, 405)
        eq(hdr.get("allow"), "GET, HEAD")
        eq(request(port, "/nope")[0], 404)
        status, hdr, body = request(port, "/")
        eq(status, 200)
        assert "/metrics" in body, body
    finally:
        stop(p)


@suite.test
def a_scrape_without_the_device_answers_up_0_and_says_why_once():
    d = tempfile.mkdtemp()
    node = os.path.join(d, "kvarena")
    os.symlink("/dev/kvarena", node)
    env = dict(os.environ, KVA_DEVICE=node)
    p, port = start(env=env)
    try:
        eq(samples(request(port)[2])["kvarena_up"], 1)
        os.unlink(node)
        for _ in range(2):
            status, hdr, body = request(port)
            eq(status, 200)
            eq(samples(body), {"kvarena_up": 0})
        os.symlink("/dev/kvarena", node)
        eq(samples(request(port)[2])["kvarena_up"], 1)
    finally:
        err = stop(p)
        shutil.rmtree(d)
    eq(err, "kvarenactl: exporter: %s: no such file, but kvarena.ko is loaded (is the device node missing from this container or chroot?); answering kvarena_up 0\n"
       "kvarenactl: exporter: the device answers again\n" % node)


@suite.test
def count_and_sigterm_end_it_and_a_port_in_use_is_an_error():
    p, port = start("-n", "2")
    request(port)
    request(port)
    eq(p.wait(timeout=60), 0)
    p, port = start()
    try:
        r = subprocess.run([KVARENACTL, "exporter", "--listen",
                            "127.0.0.1:%d" % port], capture_output=True,
                           text=True, timeout=60)
        eq(r.returncode, 1)
        assert "kvarenactl: exporter: cannot serve on 127.0.0.1:%d: Address already in use" \
            % port in r.stderr, r.stderr
    finally:
        stop(p)


@suite.test
def a_group_member_sees_its_own_domain_and_a_stranger_nothing():
    p, port = start(user=KVUSER, group=KVUSER, extra_groups=[KVGROUP])
    try:
        s = samples(request(port)[2])
        eq(s["kvarena_up"], 1)
        # The arena, yes; root's clients (another cache domain), no.
        eq(s['kvarena_frames{arena="%s",state="held"}' % ARENA], 10)
        assert not [k for k in s if k.startswith("kvarena_client_")], s
    finally:
        stop(p)
    r = subprocess.run([KVARENACTL, "exporter", "--listen", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=60,
                       user=OTHER, group=OTHER, extra_groups=[])
    eq((r.returncode, r.stdout, r.stderr), (1, "",
       "kvarenactl: /dev/kvarena: permission denied (viewing needs read access: root or the device's group)\n"))


@suite.test
def prometheus_scrapes_it_and_promql_finds_a_clients_frames():
    need("prometheus")
    need("promtool")
    p, port = start()
    d = tempfile.mkdtemp()
    conf = os.path.join(d, "prometheus.yml")
    with open(conf, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n"
                "scrape_configs:\n  - job_name: kvarena\n"
                "    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
                % port)
    log = open(os.path.join(d, "log"), "w")
    prom = subprocess.Popen(["prometheus", "--config.file=" + conf,
                             "--storage.tsdb.path=" + os.path.join(d, "data"),
                             "--web.listen-address=127.0.0.1:9090"],
                            stdout=log, stderr=subprocess.STDOUT)
    query = 'kvarena_client_held_frames{arena="%s",label="serve-a",job="kvarena"}' \
        % ARENA
    got = ""
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert prom.poll() is None, "prometheus exited: " + \
                open(os.path.join(d, "log")).read()[-2000:]
            r = subprocess.run(["promtool", "query", "instant",
                                "http://127.0.0.1:9090", query],
                               capture_output=True, text=True, timeout=60)
            got = r.stdout.strip()
            if r.returncode == 0 and " => " in got:
                break
            time.sleep(1)
        assert re.match(r"kvarena_client_held_frames\{.*label=\"serve-a\"\} => 5 @\[", got), \
            "promtool query instant %r: %r" % (query, got)
        r = subprocess.run(["promtool", "query", "instant",
                            "http://127.0.0.1:9090",
                            'sum(kvarena_client_held_frames{arena="%s"}) == '
                            'on() kvarena_frames{arena="%s",state="held"}'
                            % (ARENA, ARENA)], capture_output=True,
                           text=True, timeout=60)
        assert re.match(r"\{\} => 10 @\[", r.stdout.strip()), r.stdout
    finally:
        prom.terminate()
        prom.wait(timeout=60)
        log.close()
        stop(p)
        shutil.rmtree(d)


@atexit.register
def teardown():
    for a in clients:
        a.close()
    kvarena.destroy_arena(ARENA)


setup()
suite.run()
