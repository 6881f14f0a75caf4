# SPDX-License-Identifier: Apache-2.0

"""The kcache Python package against caches and snapshots that kcache sync
and kcache serve make, and its informers against kcache serve.

Run by meson (suite unit) with KCACHE_BIN, KCACHE_C_LIBRARY, KCACHE_SOURCE_DIR
and PYTHONPATH set; by hand:
    KCACHE_BIN=build/tools/kcache/kcache KCACHE_C_LIBRARY=build/src/libkcache-c.so.1 \
    KCACHE_SOURCE_DIR=. PYTHONPATH=src/bindings/python MPLBACKEND=Agg \
    /usr/bin/python3 -m pytest tests/bindings/python
"""

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from cffi import FFI

import kcache

KCACHE = os.environ["KCACHE_BIN"]
SOURCE = os.environ["KCACHE_SOURCE_DIR"]


class Server:
    """kcache serve's synthetic cluster, stopped at the end."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([KCACHE, "serve", "--listen", "127.0.0.1:0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in self.proc.stdout:
            m = re.search(r"serving on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                return
        raise RuntimeError("kcache serve did not start")

    def metric(self, name, labels):
        text = urllib.request.urlopen(self.url + "/metrics").read().decode()
        m = re.search(re.escape(name + "{" + labels + "}") + r" (\S+)", text)
        return float(m.group(1)) if m else 0.0

    def post(self, path, obj):
        req = urllib.request.Request(self.url + path, data=json.dumps(obj).encode(),
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req).read()

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def wait_until(condition, timeout=10.0):
    deadline = time.time() + timeout
    while not condition() and time.time() < deadline:
        time.sleep(0.02)


@pytest.fixture(scope="module")
def server():
    s = Server("--pods", "60", "--namespaces", "3", "--nodes", "3", "--creates", "0",
               "--updates", "0", "--relabels", "0", "--deletes", "0")
    # One pod no node has taken, for the picture.
    s.post("/api/v1/namespaces/ns-0/pods",
           {"metadata": {"name": "waiting"}, "spec": {"containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Pending"}})
    yield s
    s.stop()


@pytest.fixture(scope="module")
def synced(server, tmp_path_factory):
    """A cache of the server's pods and nodes, made by kcache sync."""
    cache = str(tmp_path_factory.mktemp("synced") / "cache")
    subprocess.run([KCACHE, "sync", "pods", "nodes", "--server", server.url, "--cache", cache,
                    "--until-synced"], check=True, capture_output=True)
    return cache


def test_declarations_match_the_header():
    # The package's cdef against include/kcache/c.h as the C compiler reads it.
    header = subprocess.run(
        ["cc", "-E", "-P", "-D__attribute__(x)=", "-x", "c",
         os.path.join(SOURCE, "include/kcache/c.h")],
        check=True, capture_output=True, text=True).stdout
    header = header[header.index("int kcache_c_version"):]
    theirs = FFI()
    theirs.cdef(header)
    ours = FFI()
    ours.cdef(kcache._cdef.CDEF)
    names = re.findall(r"\b(kcache_\w+)\(", header)
    assert len(set(names)) == 51
    # Every function's type, spelled the same by both.
    lib_ours = ours.dlopen(os.environ["KCACHE_C_LIBRARY"])
    lib_theirs = theirs.dlopen(os.environ["KCACHE_C_LIBRARY"])
    for name in set(names):
        assert ours.typeof(getattr(lib_ours, name)).cname == \
            theirs.typeof(getattr(lib_theirs, name)).cname, name
    assert kcache.c_api_version() == (1, 0)
    assert kcache.release()


def test_reads_stream_dicts_with_selectors(synced):
    with kcache.open(synced) as cache:
        assert cache.keyspaces() == ["nodes", "pods"]
        assert cache.stats("pods")["objects"] == 61
        pods = list(cache.list("pods"))
        assert len(pods) == 61
        in_ns1 = list(cache.list("pods", namespace="ns-1"))
        assert 0 < len(in_ns1) < 61
        assert {p["metadata"]["namespace"] for p in in_ns1} == {"ns-1"}
        canary = list(cache.list("pods", label_selector="track=canary",
                                 field_selector="status.phase=Running"))
        assert len(canary) == sum(
            1 for p in pods if p["metadata"].get("labels", {}).get("track") == "canary"
            and p["status"]["phase"] == "Running")
        one = pods[0]
        key = one["metadata"]["namespace"] + "/" + one["metadata"]["name"]
        assert cache.get("pods", key) == one
        # A generator: one object at a time, and a partial read is fine.
        it = cache.list("pods")
        assert next(it)["kind"] == "Pod"
        it.close()

        with pytest.raises(kcache.NotFound) as e:
            cache.get("pods", "ns-1/nope")
        assert e.value.code_name == "NotFound"
        assert 'pods "ns-1/nope" not found' in str(e.value)
        with pytest.raises(kcache.InvalidArgument):
            list(cache.list("pods", label_selector="a in ("))
        with pytest.raises(kcache.NotFound):
            list(cache.list("widgets"))
    with pytest.raises(ValueError):
        cache.keyspaces()
    with pytest.raises(kcache.KcacheError):
        kcache.open(synced + "-absent")


def test_snapshots_export_verify_read_and_import(synced, tmp_path):
    snap = str(tmp_path / "s.kcs")
    with kcache.open(synced) as cache:
        manifest = cache.export_snapshot(snap)
    assert [r["name"] for r in manifest["resources"]] == ["nodes", "pods"]
    assert kcache.verify_snapshot(snap)["resources"] == manifest["resources"]
    with kcache.open(snap) as s:
        assert len(list(s.list("nodes"))) == 3
    kcache.import_snapshot(snap, str(tmp_path / "imported"))
    with kcache.open(str(tmp_path / "imported")) as c:
        assert c.stats("pods")["objects"] == 61
    with open(snap, "r+b") as f:
        f.seek(300)
        f.write(b"XXXX")
    with pytest.raises(kcache.KcacheError) as e:
        kcache.verify_snapshot(snap)
    assert e.value.code_name == "Corruption"


def test_a_writer_excludes_another(tmp_path):
    path = str(tmp_path / "w")
    with kcache.open_writer(path):
        with pytest.raises(kcache.Busy):
            kcache.open_writer(path)


def test_informers_call_python_on_their_threads_write_and_resume(server, tmp_path):
    path = str(tmp_path / "informed")
    for i in range(10):
        server.post("/api/v1/namespaces/ns-2/configmaps", {"metadata": {"name": "py-%d" % i}})

    seen = {"adds": 0, "initial": 0, "updates": 0, "deletes": [], "threads": set()}
    lock = threading.Lock()

    def on_add(obj, initial):
        with lock:
            seen["adds"] += 1
            seen["initial"] += initial
            seen["threads"].add(threading.get_ident())

    def on_update(old, new):
        with lock:
            seen["updates"] += 1

    def on_delete(obj, unknown):
        with lock:
            seen["deletes"].append(obj["metadata"]["name"])

    cache = kcache.open_writer(path)
    factory = kcache.InformerFactory(cache, server=server.url)
    cms = factory.informer("cm")
    cms.add_event_handler(on_add, on_update, on_delete)
    factory.start()
    factory.wait_for_cache_sync(30)
    assert cms.has_synced()
    wait_until(lambda: seen["adds"] >= 10)  # handlers run apart from the sync
    with lock:
        assert seen["adds"] == seen["initial"] == 10
        assert threading.get_ident() not in seen["threads"]

    created = cms.create({"metadata": {"name": "py-new"}, "data": {"a": "1"}}, namespace="ns-2")
    patched = cms.patch("py-new", {"data": {"b": "2"}}, namespace="ns-2")
    with pytest.raises(kcache.Conflict):
        cms.update(created)  # its resourceVersion is stale now
    with pytest.raises(kcache.AlreadyExists):
        cms.create({"metadata": {"name": "py-new"}}, namespace="ns-2")
    cms.wait_for_resource_version(patched["metadata"]["resourceVersion"], 10)
    assert cms.get("py-new", namespace="ns-2")["data"] == {"a": "1", "b": "2"}
    assert [o["metadata"]["name"] for o in cms.list(namespace="ns-2",
                                                    field_selector="metadata.name=py-new")] == \
        ["py-new"]
    assert int(cms.resource_version) >= int(patched["metadata"]["resourceVersion"])
    watch_lists = server.metric("kcache_serve_watch_lists_total", 'resource="configmaps"')
    listed = server.metric("kcache_serve_list_items_total", 'resource="configmaps"')
    factory.close()
    cache.close()
    assert factory.handler_errors == 0
    with pytest.raises(ValueError):
        cms.has_synced()  # an informer is lent by its factory, closed now

    # Again over the same cache, as a restarted process: every object comes
    # from the cache, and the server lists nothing.
    again = {"initial": 0, "deleted": threading.Event()}

    def count_initial(obj, initial):
        again["initial"] += initial

    cache = kcache.open_writer(path)
    factory = kcache.InformerFactory(cache, server=server.url)
    cms = factory.informer("configmaps")
    cms.add_event_handler(on_add=count_initial,
                          on_delete=lambda obj, unknown: again["deleted"].set())
    factory.start()
    factory.wait_for_cache_sync(30)
    wait_until(lambda: again["initial"] >= 11)
    cms.delete("py-new", namespace="ns-2")
    assert again["deleted"].wait(10)
    assert again["initial"] == 11
    assert server.metric("kcache_serve_watch_lists_total", 'resource="configmaps"') == watch_lists
    assert server.metric("kcache_serve_list_items_total", 'resource="configmaps"') <= listed + 1
    factory.close()
    cache.close()


def test_a_handler_that_raises_is_counted_and_the_next_change_delivered(server, tmp_path):
    cache = kcache.open_writer(str(tmp_path / "raising"))
    factory = kcache.InformerFactory(cache, server=server.url)
    nodes = factory.informer("nodes")
    names = []

    def on_add(obj, initial):
        names.append(obj["metadata"]["name"])
        if len(names) == 1:
            raise RuntimeError("a handler's bug")

    nodes.add_event_handler(on_add)
    factory.start()
    factory.wait_for_cache_sync(30)
    wait_until(lambda: len(names) >= 3)
    factory.close()
    cache.close()
    assert sorted(names) == ["node-0", "node-1", "node-2"]
    assert factory.handler_errors == 1


def test_the_cluster_picture_example(synced, tmp_path):
    snap = str(tmp_path / "pic.kcs")
    with kcache.open(synced) as cache:
        cache.export_snapshot(snap)
    out = str(tmp_path / "cluster.png")
    r = subprocess.run([sys.executable, os.path.join(SOURCE, "docs/examples/cluster_picture.py"),
                        snap, out], capture_output=True, text=True, check=True)
    assert "61 pods, 4 nodes: " + out in r.stdout, r.stdout
    assert re.search(r"\(unscheduled\)\s+0\s+1\s", r.stdout), r.stdout
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
