// SPDX-License-Identifier: Apache-2.0

// Package kcache is kcache for Go: shared informers whose objects live in a
// kcache cache on disk (not in the Go heap), so that a restarted controller
// resumes its watches without a LIST; and readers of caches and snapshot
// files. It calls libkcache-c (the C API, kcache/c.h) through cgo.
//
// The API is client-go's where it can be: an InformerFactory, informers with
// AddEventHandler(ResourceEventHandlerFuncs{AddFunc, UpdateFunc,
// DeleteFunc}) and HasSynced, and listers with List(selector) and
// Get(namespace, name). Objects are json.RawMessage; Decode turns one into
// the caller's type.
//
// Handlers run on the factory's handler threads, one call at a time per
// handler, in the order of the changes. Every type is safe for concurrent
// use. docs/bindings.md says more.
package kcache

/*
#cgo LDFLAGS: -lkcache-c
#include <stdint.h>
#include <stdlib.h>
#include <kcache/c.h>

kcache_code kcache_go_add_handler(kcache_informer* informer, uintptr_t handle, char** errmsg);
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

// Error is a failed call: Code is the C API's kcache_code.
type Error struct {
	Code    int
	Name    string // "NotFound", "Conflict", ...
	Message string
}

func (e *Error) Error() string { return e.Name + ": " + e.Message }

// The codes callers tell apart most (kcache/c.h lists them all).
const (
	CodeInvalidArgument = 2
	CodeNotFound        = 3
	CodeAlreadyExists   = 4
	CodeConflict        = 9
	CodeBusy            = 17
)

func hasCode(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// IsNotFound, IsAlreadyExists and IsConflict are apimachinery's
// errors.IsNotFound and friends. A conflict is a stale resourceVersion: read
// again and retry.
func IsNotFound(err error) bool      { return hasCode(err, CodeNotFound) }
func IsAlreadyExists(err error) bool { return hasCode(err, CodeAlreadyExists) }
func IsConflict(err error) bool      { return hasCode(err, CodeConflict) }

// call runs a C function that reports an error through char** errmsg.
func call(fn func(errmsg **C.char) C.kcache_code) error {
	var msg *C.char
	code := fn(&msg)
	if code == C.KCACHE_OK {
		return nil
	}
	e := &Error{Code: int(code), Name: C.GoString(C.kcache_code_name(C.int(code)))}
	if msg != nil {
		e.Message = C.GoString(msg)
		C.kcache_free(unsafe.Pointer(msg))
	}
	return e
}

// take copies out bytes the library gave the caller, and frees them.
func take(p *C.char, n C.size_t) json.RawMessage {
	defer C.kcache_free(unsafe.Pointer(p))
	return C.GoBytes(unsafe.Pointer(p), C.int(n))
}

// cstr is a C copy of s (nil for ""), freed by the caller with free().
func cstr(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

func free(p *C.char) {
	if p != nil {
		C.free(unsafe.Pointer(p))
	}
}

// CAPIVersion is the loaded library's C API version (major, minor).
func CAPIVersion() (int, int) {
	v := int(C.kcache_c_version())
	return v / 1000, v % 1000
}

// Cache is a cache directory or snapshot file.
type Cache struct {
	mu sync.Mutex
	p  *C.kcache_cache
}

func open(path string, opener func(*C.char, **C.kcache_cache, **C.char) C.kcache_code) (*Cache, error) {
	cpath := C.CString(path)
	defer free(cpath)
	c := &Cache{}
	if err := call(func(e **C.char) C.kcache_code { return opener(cpath, &c.p, e) }); err != nil {
		return nil, fmt.Errorf("kcache: open %s: %w", path, err)
	}
	return c, nil
}

// ReaderBlockCacheBytes is the block cache of a cache opened by Open: what
// kcache get uses. A listing streams past it.
const ReaderBlockCacheBytes = 16 << 20

// Open opens a cache directory for reading only (also while kcache sync
// writes it).
func Open(dir string) (*Cache, error) {
	return open(dir, func(p *C.char, c **C.kcache_cache, e **C.char) C.kcache_code {
		o := C.kcache_cache_options_create()
		defer C.kcache_cache_options_destroy(o)
		C.kcache_cache_options_set_block_cache_bytes(o, ReaderBlockCacheBytes)
		return C.kcache_cache_open_read_only(p, o, c, e)
	})
}

// OpenSnapshot opens a snapshot file in place, read-only.
func OpenSnapshot(path string) (*Cache, error) {
	return open(path, func(p *C.char, c **C.kcache_cache, e **C.char) C.kcache_code {
		return C.kcache_snapshot_open(p, nil, c, e)
	})
}

// OpenWriter opens (or creates) a cache directory for an InformerFactory:
// one writer per directory.
func OpenWriter(dir string) (*Cache, error) {
	return open(dir, func(p *C.char, c **C.kcache_cache, e **C.char) C.kcache_code {
		return C.kcache_cache_open(p, nil, c, e)
	})
}

// Close releases the cache; informers made over it keep it open until they
// are closed.
func (c *Cache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p != nil {
		C.kcache_cache_close(c.p)
		c.p = nil
	}
}

// Get returns the object at key ("namespace/name", or "name") of keyspace.
func (c *Cache) Get(keyspace, key string) (json.RawMessage, error) {
	ks, k := C.CString(keyspace), C.CString(key)
	defer free(ks)
	defer free(k)
	var out *C.char
	var n C.size_t
	if err := call(func(e **C.char) C.kcache_code { return C.kcache_cache_get(c.p, ks, k, &out, &n, e) }); err != nil {
		return nil, err
	}
	return take(out, n), nil
}

// ListOptions select objects: a namespace ("" for all) and selectors in
// kubectl's syntax.
type ListOptions struct {
	Namespace, LabelSelector, FieldSelector string
}

// Each calls fn with every object of keyspace that o selects, in key order,
// streamed: one object at a time. fn's object is valid only during the
// call (copy it to keep it). An error from fn stops the listing and is
// returned.
func (c *Cache) Each(keyspace string, o ListOptions, fn func(json.RawMessage) error) error {
	ks := C.CString(keyspace)
	defer free(ks)
	return each(func(it **C.kcache_iterator, ns, ls, fs *C.char, e **C.char) C.kcache_code {
		return C.kcache_cache_list(c.p, ks, ns, ls, fs, it, e)
	}, o, fn)
}

func each(open func(**C.kcache_iterator, *C.char, *C.char, *C.char, **C.char) C.kcache_code,
	o ListOptions, fn func(json.RawMessage) error) error {
	ns, ls, fs := cstr(o.Namespace), cstr(o.LabelSelector), cstr(o.FieldSelector)
	defer free(ns)
	defer free(ls)
	defer free(fs)
	var it *C.kcache_iterator
	if err := call(func(e **C.char) C.kcache_code { return open(&it, ns, ls, fs, e) }); err != nil {
		return err
	}
	defer C.kcache_iterator_destroy(it)
	for C.kcache_iterator_next(it) != 0 {
		var n C.size_t
		p := C.kcache_iterator_object(it, &n)
		if err := fn(unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))); err != nil {
			return err
		}
	}
	return call(func(e **C.char) C.kcache_code { return C.kcache_iterator_status(it, e) })
}

// FactoryOptions say where the cluster is and what to watch. With Server
// and no Kubeconfig, that server as it is (kubectl's --server); otherwise
// the kubeconfig ($KUBECONFIG or ~/.kube/config by default; the in-cluster
// configuration in a pod without one).
type FactoryOptions struct {
	Server, Kubeconfig, Context             string
	Namespace, LabelSelector, FieldSelector string
}

// InformerFactory is client-go's SharedInformerFactory over a kcache cache.
type InformerFactory struct {
	mu        sync.Mutex
	p         *C.kcache_factory
	informers map[*C.kcache_informer]*Informer
	handles   []cgo.Handle // the handlers, released on Close
}

// NewInformerFactory makes informers over cache (opened with OpenWriter).
func NewInformerFactory(cache *Cache, o FactoryOptions) (*InformerFactory, error) {
	opts := C.kcache_factory_options_create()
	defer C.kcache_factory_options_destroy(opts)
	for _, s := range []struct {
		value string
		set   func(*C.kcache_factory_options, *C.char)
	}{
		{o.Server, func(p *C.kcache_factory_options, v *C.char) { C.kcache_factory_options_set_server(p, v) }},
		{o.Kubeconfig, func(p *C.kcache_factory_options, v *C.char) { C.kcache_factory_options_set_kubeconfig(p, v) }},
		{o.Context, func(p *C.kcache_factory_options, v *C.char) { C.kcache_factory_options_set_context(p, v) }},
		{o.Namespace, func(p *C.kcache_factory_options, v *C.char) { C.kcache_factory_options_set_namespace(p, v) }},
		{o.LabelSelector, func(p *C.kcache_factory_options, v *C.char) { C.kcache_factory_options_set_label_selector(p, v) }},
		{o.FieldSelector, func(p *C.kcache_factory_options, v *C.char) { C.kcache_factory_options_set_field_selector(p, v) }},
	} {
		if s.value != "" {
			v := C.CString(s.value)
			s.set(opts, v)
			free(v)
		}
	}
	f := &InformerFactory{informers: map[*C.kcache_informer]*Informer{}}
	if err := call(func(e **C.char) C.kcache_code { return C.kcache_factory_create(cache.p, opts, &f.p, e) }); err != nil {
		return nil, err
	}
	return f, nil
}

// ForResource returns the informer of the resource kubectl would call
// resource ("pods", "deploy", "widgets.example.com"), made on first use.
func (f *InformerFactory) ForResource(resource string) (*Informer, error) {
	r := C.CString(resource)
	defer free(r)
	var p *C.kcache_informer
	if err := call(func(e **C.char) C.kcache_code { return C.kcache_factory_informer(f.p, r, &p, e) }); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if i, ok := f.informers[p]; ok {
		return i, nil
	}
	i := &Informer{f: f, p: p}
	f.informers[p] = i
	return i, nil
}

// Start starts every informer not started yet.
func (f *InformerFactory) Start() error {
	return call(func(e **C.char) C.kcache_code { return C.kcache_factory_start(f.p, e) })
}

// WaitForCacheSync waits until every informer has synced, or timeout.
func (f *InformerFactory) WaitForCacheSync(timeout time.Duration) error {
	return call(func(e **C.char) C.kcache_code {
		return C.kcache_factory_wait_for_cache_sync(f.p, C.int64_t(timeout.Milliseconds()), e)
	})
}

// Shutdown stops every informer; once it returns no handler runs. Not from
// a handler.
func (f *InformerFactory) Shutdown() { C.kcache_factory_stop(f.p) }

// Close shuts the factory down and frees it and its informers.
func (f *InformerFactory) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.p == nil {
		return
	}
	C.kcache_factory_destroy(f.p)
	f.p = nil
	for _, h := range f.handles {
		h.Delete()
	}
	f.handles = nil
}

// ResourceEventHandlerFuncs is client-go's, with objects as JSON: nil funcs
// are skipped. isInInitialList is true for the objects an informer starts
// with; finalStateUnknown for a delete a relist noticed (the object is the
// last one known, and may be nil).
type ResourceEventHandlerFuncs struct {
	AddFunc    func(obj json.RawMessage, isInInitialList bool)
	UpdateFunc func(oldObj, newObj json.RawMessage)
	DeleteFunc func(obj json.RawMessage, finalStateUnknown bool)
}

// Informer is one resource's shared informer.
type Informer struct {
	f *InformerFactory
	p *C.kcache_informer
}

// AddEventHandler registers h: it first gets every object the informer
// holds as an add, then each change.
func (i *Informer) AddEventHandler(h ResourceEventHandlerFuncs) error {
	handle := cgo.NewHandle(h)
	i.f.mu.Lock()
	i.f.handles = append(i.f.handles, handle)
	i.f.mu.Unlock()
	return call(func(e **C.char) C.kcache_code {
		return C.kcache_go_add_handler(i.p, C.uintptr_t(handle), e)
	})
}

// HasSynced reports whether the informer has held the server's state once.
func (i *Informer) HasSynced() bool { return C.kcache_informer_has_synced(i.p) != 0 }

// LastSyncResourceVersion is the resourceVersion the informer's cache is at.
func (i *Informer) LastSyncResourceVersion() string {
	p := C.kcache_informer_resource_version(i.p)
	defer C.kcache_free(unsafe.Pointer(p))
	return C.GoString(p)
}

// WaitForResourceVersion waits until the informer's cache has reached rv
// (one a write returned): read-your-writes.
func (i *Informer) WaitForResourceVersion(rv string, timeout time.Duration) error {
	r := C.CString(rv)
	defer free(r)
	return call(func(e **C.char) C.kcache_code {
		return C.kcache_informer_wait_for_resource_version(i.p, r, C.int64_t(timeout.Milliseconds()), e)
	})
}

// Lister reads the informer's cache.
func (i *Informer) Lister() Lister { return Lister{i} }

// Lister is client-go's lister, over the informer's cache on disk.
type Lister struct{ i *Informer }

// List returns the objects matching a label selector ("" for all) in every
// namespace. Each(...) streams instead.
func (l Lister) List(selector string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	err := l.Each(ListOptions{LabelSelector: selector}, func(o json.RawMessage) error {
		out = append(out, append(json.RawMessage(nil), o...))
		return nil
	})
	return out, err
}

// Each streams the objects o selects to fn, as Cache.Each.
func (l Lister) Each(o ListOptions, fn func(json.RawMessage) error) error {
	return each(func(it **C.kcache_iterator, ns, ls, fs *C.char, e **C.char) C.kcache_code {
		return C.kcache_informer_list(l.i.p, ns, ls, fs, it, e)
	}, o, fn)
}

// Get returns object namespace/name ("" namespace for a cluster-scoped one).
func (l Lister) Get(namespace, name string) (json.RawMessage, error) {
	ns, n := cstr(namespace), C.CString(name)
	defer free(ns)
	defer free(n)
	var out *C.char
	var size C.size_t
	if err := call(func(e **C.char) C.kcache_code {
		return C.kcache_informer_get(l.i.p, ns, n, &out, &size, e)
	}); err != nil {
		return nil, err
	}
	return take(out, size), nil
}

func (i *Informer) write(fn func(out **C.char, n *C.size_t, e **C.char) C.kcache_code) (json.RawMessage, error) {
	var out *C.char
	var n C.size_t
	if err := call(func(e **C.char) C.kcache_code { return fn(&out, &n, e) }); err != nil {
		return nil, err
	}
	return take(out, n), nil
}

// writeObject runs a create or update of obj (JSON) in namespace.
func (i *Informer) writeObject(namespace string, obj []byte,
	fn func(*C.kcache_informer, *C.char, *C.char, C.size_t, **C.char, *C.size_t, **C.char) C.kcache_code) (json.RawMessage, error) {
	ns, body := cstr(namespace), C.CBytes(obj)
	defer free(ns)
	defer C.free(body)
	return i.write(func(out **C.char, n *C.size_t, e **C.char) C.kcache_code {
		return fn(i.p, ns, (*C.char)(body), C.size_t(len(obj)), out, n, e)
	})
}

// Create creates obj (JSON) in namespace (or its metadata's); returns it as
// stored.
func (i *Informer) Create(namespace string, obj []byte) (json.RawMessage, error) {
	return i.writeObject(namespace, obj, func(p *C.kcache_informer, ns, b *C.char, n C.size_t, out **C.char, on *C.size_t, e **C.char) C.kcache_code {
		return C.kcache_informer_create_object(p, ns, b, n, out, on, e)
	})
}

// Update replaces the object; with metadata.resourceVersion set, only over
// that version (IsConflict otherwise).
func (i *Informer) Update(namespace string, obj []byte) (json.RawMessage, error) {
	return i.writeObject(namespace, obj, func(p *C.kcache_informer, ns, b *C.char, n C.size_t, out **C.char, on *C.size_t, e **C.char) C.kcache_code {
		return C.kcache_informer_update_object(p, ns, b, n, out, on, e)
	})
}

// PatchType is how Patch reads its patch.
type PatchType int

const (
	MergePatchType          PatchType = C.KCACHE_PATCH_MERGE
	JSONPatchType           PatchType = C.KCACHE_PATCH_JSON
	StrategicMergePatchType PatchType = C.KCACHE_PATCH_STRATEGIC_MERGE
)

// Patch patches object namespace/name.
func (i *Informer) Patch(namespace, name string, pt PatchType, patch []byte) (json.RawMessage, error) {
	ns, nm, body := cstr(namespace), C.CString(name), C.CBytes(patch)
	defer free(ns)
	defer free(nm)
	defer C.free(body)
	return i.write(func(out **C.char, n *C.size_t, e **C.char) C.kcache_code {
		return C.kcache_informer_patch_object(i.p, ns, nm, C.kcache_patch_type(pt), (*C.char)(body),
			C.size_t(len(patch)), out, n, e)
	})
}

// Delete deletes object namespace/name.
func (i *Informer) Delete(namespace, name string) error {
	ns, nm := cstr(namespace), C.CString(name)
	defer free(ns)
	defer free(nm)
	return call(func(e **C.char) C.kcache_code { return C.kcache_informer_delete_object(i.p, ns, nm, e) })
}

// Decode unmarshals an object into the caller's type.
func Decode[T any](obj json.RawMessage) (*T, error) {
	var out T
	if err := json.Unmarshal(obj, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func handlers(h C.uintptr_t) ResourceEventHandlerFuncs {
	return cgo.Handle(h).Value().(ResourceEventHandlerFuncs)
}

//export kcacheGoOnAdd
func kcacheGoOnAdd(h C.uintptr_t, obj *C.char, n C.size_t, initial C.int) {
	if f := handlers(h).AddFunc; f != nil {
		f(C.GoBytes(unsafe.Pointer(obj), C.int(n)), initial != 0)
	}
}

//export kcacheGoOnUpdate
func kcacheGoOnUpdate(h C.uintptr_t, oldObj *C.char, oldN C.size_t, newObj *C.char, newN C.size_t) {
	if f := handlers(h).UpdateFunc; f != nil {
		f(C.GoBytes(unsafe.Pointer(oldObj), C.int(oldN)), C.GoBytes(unsafe.Pointer(newObj), C.int(newN)))
	}
}

//export kcacheGoOnDelete
func kcacheGoOnDelete(h C.uintptr_t, obj *C.char, n C.size_t, unknown C.int) {
	if f := handlers(h).DeleteFunc; f != nil {
		var o json.RawMessage
		if n > 0 {
			o = C.GoBytes(unsafe.Pointer(obj), C.int(n))
		}
		f(o, unknown != 0)
	}
}
