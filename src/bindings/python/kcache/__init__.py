# SPDX-License-Identifier: Apache-2.0

"""kcache for Python: Kubernetes objects from a kcache cache or snapshot, and
informers that fill a cache in this process, over the C API (libkcache-c).

    import kcache
    with kcache.open("/var/cache/kc") as cache:          # or a snapshot file
        for pod in cache.list("pods", namespace="prod", label_selector="app=web"):
            print(pod["metadata"]["name"])

Objects are dicts decoded from the JSON the cache holds; lists are streamed,
one object at a time. Errors raise KcacheError (NotFound, Conflict, ... by
the C API's code). docs/bindings.md says who owns what and on which thread
callbacks run.

The library is found as libkcache-c.so.1 by the dynamic loader, or at the
path in $KCACHE_C_LIBRARY.
"""

import json
import os
import threading

from cffi import FFI

from ._cdef import CDEF

__all__ = [
    "KcacheError", "NotFound", "AlreadyExists", "Conflict", "InvalidArgument", "Busy",
    "Cache", "open", "open_writer", "verify_snapshot", "import_snapshot",
    "InformerFactory", "Informer", "c_api_version", "release",
]

_ffi = FFI()
_ffi.cdef(CDEF)
_lib = _ffi.dlopen(os.environ.get("KCACHE_C_LIBRARY") or "libkcache-c.so.1")

C_API_MAJOR = 1
if _lib.kcache_c_version() // 1000 != C_API_MAJOR:
    raise ImportError("kcache: libkcache-c has C API %d.x; this package needs %d.x"
                      % (_lib.kcache_c_version() // 1000, C_API_MAJOR))


def c_api_version():
    """The loaded library's C API version as (major, minor)."""
    v = _lib.kcache_c_version()
    return v // 1000, v % 1000


def release():
    """The kcache release the library was built from."""
    return _ffi.string(_lib.kcache_release()).decode()


class KcacheError(Exception):
    """A failed call: `code` is the C API's kcache_code, `code_name` its name."""

    def __init__(self, code, message):
        self.code = code
        self.code_name = _ffi.string(_lib.kcache_code_name(code)).decode()
        self.message = message
        super().__init__("%s: %s" % (self.code_name, message))


class InvalidArgument(KcacheError):
    pass


class NotFound(KcacheError):
    pass


class AlreadyExists(KcacheError):
    pass


class Conflict(KcacheError):
    """HTTP 409 Conflict (a stale resourceVersion): read again and retry."""


class Busy(KcacheError):
    pass


_ERRORS = {2: InvalidArgument, 3: NotFound, 4: AlreadyExists, 9: Conflict, 17: Busy}


def _check(fn, *args):
    """Calls `fn(*args, errmsg)`, raising the error it reports."""
    err = _ffi.new("char**")
    code = fn(*args, err)
    if code != 0:
        message = _ffi.string(err[0]).decode("utf-8", "replace") if err[0] else ""
        _lib.kcache_free(err[0])
        raise _ERRORS.get(code, KcacheError)(code, message)


def _take(ptr, length):
    """The bytes the library gave the caller, freed."""
    try:
        return _ffi.unpack(ptr[0], length[0])
    finally:
        _lib.kcache_free(ptr[0])


def _out(fn, *args):
    """Calls `fn(*args, &out, &len, errmsg)`; the JSON it returns, decoded."""
    out, length = _ffi.new("char**"), _ffi.new("size_t*")
    _check(fn, *args, out, length)
    return json.loads(_take(out, length))


def _str(s):
    return _ffi.NULL if s is None else s.encode()


class _Options:
    """kcache_cache_options for `encryption_key` (32 bytes) and `encrypt`."""

    def __init__(self, encryption_key=None, encrypt=None, create_if_missing=True,
                 block_cache_bytes=None):
        self.ptr = _ffi.gc(_lib.kcache_cache_options_create(), _lib.kcache_cache_options_destroy)
        _lib.kcache_cache_options_set_create_if_missing(self.ptr, 1 if create_if_missing else 0)
        if block_cache_bytes is not None:
            _lib.kcache_cache_options_set_block_cache_bytes(self.ptr, block_cache_bytes)
        if encryption_key is not None:
            _lib.kcache_cache_options_set_encryption_key(self.ptr, encryption_key,
                                                         len(encryption_key))
        if encrypt is not None:
            names = [_ffi.new("char[]", n.encode()) for n in encrypt]
            _lib.kcache_cache_options_set_encrypted_keyspaces(
                self.ptr, _ffi.new("const char*[]", names), len(names))


def _stream(opener, *args):
    """Yields the objects of the iterator `opener(*args, &it, errmsg)` makes,
    one at a time; the iterator is destroyed when the generator ends."""
    it_out = _ffi.new("kcache_iterator**")
    _check(opener, *args, it_out)
    it = it_out[0]
    length = _ffi.new("size_t*")
    try:
        while _lib.kcache_iterator_next(it):
            data = _lib.kcache_iterator_object(it, length)
            yield json.loads(_ffi.unpack(data, length[0]))
        _check(_lib.kcache_iterator_status, it)
    finally:
        _lib.kcache_iterator_destroy(it)


class _Owned:
    """A C handle this object owns: released by close(), at the end of a
    `with`, or when the object is collected; a use after that is ValueError."""

    _ptr = None
    _what = "handle"

    def _release(self, ptr):
        raise NotImplementedError

    def _handle(self):
        if self._ptr is None:
            raise ValueError("kcache: the %s is closed" % self._what)
        return self._ptr

    def close(self):
        if self._ptr is not None:
            ptr, self._ptr = self._ptr, None
            self._release(ptr)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class Cache(_Owned):
    """A cache directory or snapshot file, opened by open() or open_writer().

    Safe to use from several threads. Close it (or use `with`) to release the
    files; informers made over it keep them open until they are closed.
    """

    _what = "cache"

    def __init__(self, ptr, path):
        self._ptr = ptr
        self.path = path

    def _release(self, ptr):
        _lib.kcache_cache_close(ptr)

    def refresh(self):
        """A reader catches up with the writer."""
        _check(_lib.kcache_cache_refresh, self._handle())

    def keyspaces(self):
        """The keyspaces ("pods", "deployments.apps"), sorted."""
        return _out(_lib.kcache_cache_keyspaces, self._handle())

    def stats(self, keyspace):
        """objects, bytesOnDisk, resourceVersion, lastSync and resource of a keyspace."""
        return _out(_lib.kcache_cache_stats, self._handle(), keyspace.encode())

    def get(self, keyspace, key):
        """The object at `key` ("namespace/name", or "name"); NotFound if absent."""
        return _out(_lib.kcache_cache_get, self._handle(), keyspace.encode(), key.encode())

    def list(self, keyspace, namespace=None, label_selector=None, field_selector=None):
        """Yields the objects of `keyspace` in key order, streamed: those of
        `namespace` (all if None) matching the selectors (kubectl's syntax)."""
        return _stream(_lib.kcache_cache_list, self._handle(), keyspace.encode(),
                       _str(namespace), _str(label_selector), _str(field_selector))

    def export_snapshot(self, path, zstd_level=0):
        """Writes the cache to the snapshot file `path`; returns its manifest."""
        return _out(_lib.kcache_snapshot_export, self._handle(), os.fsencode(path), zstd_level)


# A reader's block cache: what kcache get uses. A list streams past it; the
# cache only keeps recently read blocks for gets.
READER_BLOCK_CACHE_BYTES = 16 << 20


def open(path, encryption_key=None, block_cache_bytes=READER_BLOCK_CACHE_BYTES):
    """Opens a cache directory read-only (also while kcache sync writes it), or
    a snapshot file in place; which one `path` is decides. Memory: the block
    cache (16 MiB by default) and one object at a time while listing."""
    options = _Options(encryption_key=encryption_key, block_cache_bytes=block_cache_bytes)
    out = _ffi.new("kcache_cache**")
    if os.path.isdir(path):
        _check(_lib.kcache_cache_open_read_only, os.fsencode(path), options.ptr, out)
    else:
        _check(_lib.kcache_snapshot_open, os.fsencode(path), options.ptr, out)
    return Cache(out[0], path)


def open_writer(path, encryption_key=None, encrypt=None):
    """Opens (or creates) a cache directory for writing, as informers need it:
    one writer per directory (Busy otherwise)."""
    options = _Options(encryption_key=encryption_key, encrypt=encrypt)
    out = _ffi.new("kcache_cache**")
    _check(_lib.kcache_cache_open, os.fsencode(path), options.ptr, out)
    return Cache(out[0], path)


def verify_snapshot(path, encryption_key=None):
    """Checks the whole snapshot file; returns its manifest. Corruption names where."""
    return _out(_lib.kcache_snapshot_verify, os.fsencode(path),
                _Options(encryption_key=encryption_key).ptr)


def import_snapshot(path, cache_dir, encryption_key=None):
    """Builds a new cache in `cache_dir` from a snapshot file; returns its manifest."""
    return _out(_lib.kcache_snapshot_import, os.fsencode(path), os.fsencode(cache_dir),
                _Options(encryption_key=encryption_key).ptr)


_PATCH_TYPES = {"merge": 0, "json": 1, "strategic": 2}


class Informer:
    """One resource's shared informer, lent by its InformerFactory: a lister
    (get, list), handlers, and writes to the resource."""

    def __init__(self, factory, ptr):
        self._factory = factory
        self._ptr = ptr

    def _handle(self):
        """The informer, lent by a factory that must still be open."""
        self._factory._handle()
        return self._ptr

    def add_event_handler(self, on_add=None, on_update=None, on_delete=None):
        """Registers handlers, called with dicts: on_add(obj, in_initial_list),
        on_update(old, new), on_delete(obj, final_state_unknown).

        They run on the factory's handler threads (not the caller's), one call
        at a time per registration, in the order of the changes; cffi takes
        the GIL for each call. An exception a handler raises is printed and
        counted in the factory's `handler_errors`, and the next change is
        delivered."""
        factory = self._factory

        def onerror(exc_type, exc_value, tb):
            import traceback
            with factory._lock:
                factory.handler_errors += 1
            traceback.print_exception(exc_type, exc_value, tb)

        callbacks = [_ffi.NULL, _ffi.NULL, _ffi.NULL]
        if on_add:
            @_ffi.callback("kcache_on_add", onerror=onerror)
            def add(_, data, length, initial):
                on_add(json.loads(_ffi.unpack(data, length)), bool(initial))
            callbacks[0] = add
        if on_update:
            @_ffi.callback("kcache_on_update", onerror=onerror)
            def update(_, old, old_len, new, new_len):
                on_update(json.loads(_ffi.unpack(old, old_len)),
                          json.loads(_ffi.unpack(new, new_len)))
            callbacks[1] = update
        if on_delete:
            @_ffi.callback("kcache_on_delete", onerror=onerror)
            def delete(_, data, length, unknown):
                obj = json.loads(_ffi.unpack(data, length)) if length else None
                on_delete(obj, bool(unknown))
            callbacks[2] = delete
        # The callbacks live as long as the factory that calls them.
        factory._callbacks.append(callbacks)
        _check(_lib.kcache_informer_add_handler, self._handle(), *callbacks, _ffi.NULL)

    def has_synced(self):
        return bool(_lib.kcache_informer_has_synced(self._handle()))

    @property
    def resource_version(self):
        p = _lib.kcache_informer_resource_version(self._handle())
        try:
            return _ffi.string(p).decode()
        finally:
            _lib.kcache_free(p)

    def wait_for_resource_version(self, rv, timeout=30.0):
        """Waits until the informer's cache has reached `rv` (a write's)."""
        _check(_lib.kcache_informer_wait_for_resource_version, self._handle(), rv.encode(),
               int(timeout * 1000))

    def get(self, name, namespace=None):
        return _out(_lib.kcache_informer_get, self._handle(), _str(namespace), name.encode())

    def list(self, namespace=None, label_selector=None, field_selector=None):
        return _stream(_lib.kcache_informer_list, self._handle(), _str(namespace),
                       _str(label_selector), _str(field_selector))

    def create(self, obj, namespace=None):
        """Creates `obj` (a dict); returns it as stored."""
        body = json.dumps(obj).encode()
        return _out(_lib.kcache_informer_create_object, self._handle(), _str(namespace), body,
                    len(body))

    def update(self, obj, namespace=None):
        """Replaces the object; with metadata.resourceVersion only over it (Conflict)."""
        body = json.dumps(obj).encode()
        return _out(_lib.kcache_informer_update_object, self._handle(), _str(namespace), body,
                    len(body))

    def patch(self, name, patch, namespace=None, patch_type="merge"):
        body = (patch if isinstance(patch, (bytes, str)) else json.dumps(patch))
        body = body.encode() if isinstance(body, str) else body
        return _out(_lib.kcache_informer_patch_object, self._handle(), _str(namespace),
                    name.encode(), _PATCH_TYPES[patch_type], body, len(body))

    def delete(self, name, namespace=None):
        _check(_lib.kcache_informer_delete_object, self._handle(), _str(namespace), name.encode())


class InformerFactory(_Owned):
    """Shared informers over a cache opened with open_writer(), each resuming
    its watch from the cache without a LIST where it can.

    The cluster: `server` (kubectl's --server), else the kubeconfig (`kubeconfig`,
    `context`; $KUBECONFIG or ~/.kube/config by default; the in-cluster
    configuration in a pod without one)."""

    _what = "factory"

    def __init__(self, cache, server=None, kubeconfig=None, context=None, namespace=None,
                 label_selector=None, field_selector=None):
        options = _ffi.gc(_lib.kcache_factory_options_create(),
                          _lib.kcache_factory_options_destroy)
        for setter, value in ((_lib.kcache_factory_options_set_server, server),
                              (_lib.kcache_factory_options_set_kubeconfig, kubeconfig),
                              (_lib.kcache_factory_options_set_context, context),
                              (_lib.kcache_factory_options_set_namespace, namespace),
                              (_lib.kcache_factory_options_set_label_selector, label_selector),
                              (_lib.kcache_factory_options_set_field_selector, field_selector)):
            if value is not None:
                setter(options, value.encode())
        out = _ffi.new("kcache_factory**")
        _check(_lib.kcache_factory_create, cache._handle(), options, out)
        self._ptr = out[0]
        self._cache = cache  # the informers' keyspaces live in it
        self._callbacks = []
        self._lock = threading.Lock()
        self.handler_errors = 0

    def informer(self, resource):
        """The informer of `resource` as kubectl names it ("pods", "deploy")."""
        out = _ffi.new("kcache_informer**")
        _check(_lib.kcache_factory_informer, self._handle(), resource.encode(), out)
        return Informer(self, out[0])

    def start(self):
        _check(_lib.kcache_factory_start, self._handle())

    def wait_for_cache_sync(self, timeout=60.0):
        """Waits until every informer has synced; DeadlineExceeded names those behind."""
        _check(_lib.kcache_factory_wait_for_cache_sync, self._handle(), int(timeout * 1000))

    def stop(self):
        """Stops the informers; once it returns no handler runs. Not from a handler."""
        if self._ptr is not None:
            _lib.kcache_factory_stop(self._ptr)

    def _release(self, ptr):
        _lib.kcache_factory_destroy(ptr)  # no handler runs after it
        self._callbacks = []
