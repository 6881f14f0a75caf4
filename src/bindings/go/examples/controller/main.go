// SPDX-License-Identifier: Apache-2.0

// Command controller is docs/examples/controller.cc in Go, on the kcache
// package: every namespace whose labels match a selector gets a ConfigMap
// with the given data, owned by the namespace; one that stops matching loses
// it; a ConfigMap changed by hand is put back. Its informers live in a kcache
// cache on disk: after a restart, SIGKILL included, it resumes their watches
// with no LIST and converges on what changed meanwhile.
//
//	controller --cache DIR [--server URL | --kubeconfig F [--context C]]
//	  [--selector kcache.io/config=enabled] [--configmap kcache-config]
//	  [--data greeting=hello]... [--workers 2] [--reconcile-delay 0s]
//
// Unlike the C++ example it elects no leader (the C API has no leader
// election yet) and records no Events.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"kcache.io/kcache"
)

// queue is a work queue of namespace names: one entry per name however often
// it is added, and a name being worked on is not handed to a second worker.
type queue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending []string
	queued  map[string]bool
	active  map[string]bool
	redo    map[string]bool
	closed  bool
}

func newQueue() *queue {
	q := &queue{queued: map[string]bool{}, active: map[string]bool{}, redo: map[string]bool{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *queue) Add(name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.active[name] {
		q.redo[name] = true
		return
	}
	if !q.queued[name] {
		q.queued[name] = true
		q.pending = append(q.pending, name)
		q.cond.Signal()
	}
}

func (q *queue) Get() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.pending) == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return "", false
	}
	name := q.pending[0]
	q.pending = q.pending[1:]
	delete(q.queued, name)
	q.active[name] = true
	return name, true
}

func (q *queue) Done(name string) {
	q.mu.Lock()
	delete(q.active, name)
	again := q.redo[name]
	delete(q.redo, name)
	q.mu.Unlock()
	if again {
		q.Add(name)
	}
}

func (q *queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

type dataFlag map[string]string

func (d dataFlag) String() string { return fmt.Sprint(map[string]string(d)) }
func (d dataFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	d[k] = val
	return nil
}

type objectMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	DeletionTimestamp string            `json:"deletionTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	OwnerReferences   []ownerReference  `json:"ownerReferences,omitempty"`
}

type ownerReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Controller bool   `json:"controller"`
}

type object struct {
	Metadata objectMeta        `json:"metadata"`
	Data     map[string]string `json:"data,omitempty"`
}

type controller struct {
	selector, name         string
	delay                  time.Duration
	data                   map[string]string
	namespaces, configmaps *kcache.Informer
	queue                  *queue
	first                  sync.Once
}

// wanted: the namespace exists, is not being deleted, and its labels match
// the selector (the lister evaluates it, as kubectl would).
func (c *controller) wanted(ns string) (*object, bool, error) {
	var owner *object
	err := c.namespaces.Lister().Each(kcache.ListOptions{LabelSelector: c.selector,
		FieldSelector: "metadata.name=" + ns}, func(o json.RawMessage) error {
		var err error
		owner, err = kcache.Decode[object](o)
		return err
	})
	if err != nil || owner == nil {
		return nil, false, err
	}
	return owner, owner.Metadata.DeletionTimestamp == "", nil
}

func (c *controller) reconcile(ns string) error {
	time.Sleep(c.delay)
	owner, wanted, err := c.wanted(ns)
	if err != nil {
		return err
	}
	var current *object
	raw, err := c.configmaps.Lister().Get(ns, c.name)
	switch {
	case kcache.IsNotFound(err):
	case err != nil:
		return err
	default:
		if current, err = kcache.Decode[object](raw); err != nil {
			return err
		}
	}
	if !wanted {
		if current == nil || !ownedByNamespace(current, owner) {
			return nil
		}
		if err := c.configmaps.Delete(ns, c.name); err != nil && !kcache.IsNotFound(err) {
			return err
		}
		log.Printf("deleted %s/%s", ns, c.name)
		return nil
	}
	var written json.RawMessage
	if current == nil {
		cm := object{Metadata: objectMeta{Name: c.name, Namespace: ns,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "kcache-go-example-controller"},
			OwnerReferences: []ownerReference{{APIVersion: "v1", Kind: "Namespace", Name: ns,
				UID: owner.Metadata.UID, Controller: true}}}, Data: c.data}
		body, _ := json.Marshal(cm)
		if written, err = c.configmaps.Create(ns, body); err != nil {
			return err
		}
		log.Printf("created %s/%s", ns, c.name)
	} else if !reflect.DeepEqual(current.Data, c.data) {
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return err
		}
		doc["data"] = c.data // over its resourceVersion: a conflict retries
		body, _ := json.Marshal(doc)
		if written, err = c.configmaps.Update(ns, body); err != nil {
			return err
		}
		log.Printf("restored %s/%s", ns, c.name)
	}
	if written != nil { // read-your-writes before the next reconcile of ns
		var w object
		json.Unmarshal(written, &w)
		return c.configmaps.WaitForResourceVersion(w.Metadata.ResourceVersion, 10*time.Second)
	}
	return nil
}

func ownedByNamespace(cm, owner *object) bool {
	for _, r := range cm.Metadata.OwnerReferences {
		if r.Controller && r.Kind == "Namespace" && (owner == nil || r.UID == owner.Metadata.UID) {
			return true
		}
	}
	return false
}

func (c *controller) worker() {
	for {
		ns, ok := c.queue.Get()
		if !ok {
			return
		}
		if err := c.reconcile(ns); err != nil {
			log.Printf("retrying %s: %v", ns, err)
			time.AfterFunc(200*time.Millisecond, func() { c.queue.Add(ns) })
		}
		c.first.Do(func() { log.Printf("first reconcile") })
		c.queue.Done(ns)
	}
}

func run() error {
	o := kcache.FactoryOptions{}
	c := &controller{queue: newQueue()}
	data := dataFlag{}
	dir := flag.String("cache", "", "the cache directory (created if missing)")
	flag.StringVar(&o.Server, "server", "", "the API server's address")
	flag.StringVar(&o.Kubeconfig, "kubeconfig", "", "the kubeconfig file")
	flag.StringVar(&o.Context, "context", "", "the kubeconfig context")
	flag.StringVar(&c.selector, "selector", "kcache.io/config=enabled", "namespaces to configure")
	flag.StringVar(&c.name, "configmap", "kcache-config", "the ConfigMap's name")
	flag.Var(data, "data", "KEY=VALUE of the ConfigMap (repeatable; default greeting=hello)")
	workers := flag.Int("workers", 2, "reconciles at once")
	flag.DurationVar(&c.delay, "reconcile-delay", 0, "a pause before each reconcile (for tests)")
	flag.Parse()
	if *dir == "" {
		return fmt.Errorf("--cache is required")
	}
	if len(data) == 0 {
		data["greeting"] = "hello"
	}
	c.data = data

	cache, err := kcache.OpenWriter(*dir)
	if err != nil {
		return err
	}
	defer cache.Close()
	factory, err := kcache.NewInformerFactory(cache, o)
	if err != nil {
		return err
	}
	defer factory.Close()
	if c.namespaces, err = factory.ForResource("namespaces"); err != nil {
		return err
	}
	if c.configmaps, err = factory.ForResource("configmaps"); err != nil {
		return err
	}
	c.namespaces.AddEventHandler(kcache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj json.RawMessage, _ bool) { c.enqueueNamespace(obj) },
		UpdateFunc: func(_, obj json.RawMessage) { c.enqueueNamespace(obj) },
		DeleteFunc: func(obj json.RawMessage, _ bool) { c.enqueueNamespace(obj) },
	})
	c.configmaps.AddEventHandler(kcache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj json.RawMessage, _ bool) { c.enqueueConfigMap(obj) },
		UpdateFunc: func(_, obj json.RawMessage) { c.enqueueConfigMap(obj) },
		DeleteFunc: func(obj json.RawMessage, _ bool) { c.enqueueConfigMap(obj) },
	})
	if err := factory.Start(); err != nil {
		return err
	}
	if err := factory.WaitForCacheSync(2 * time.Minute); err != nil {
		return err
	}
	log.Printf("synced")
	for i := 0; i < *workers; i++ {
		go c.worker()
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	log.Printf("stopping on %v", <-stop)
	factory.Shutdown()
	c.queue.Close()
	return nil
}

func (c *controller) enqueueNamespace(obj json.RawMessage) {
	if o, err := kcache.Decode[object](obj); err == nil {
		c.queue.Add(o.Metadata.Name)
	}
}

func (c *controller) enqueueConfigMap(obj json.RawMessage) {
	if o, err := kcache.Decode[object](obj); err == nil && o.Metadata.Name == c.name {
		c.queue.Add(o.Metadata.Namespace)
	}
}

func main() {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	log.SetOutput(os.Stdout)
	if err := run(); err != nil {
		log.Printf("error: %v", err)
		os.Exit(1)
	}
}
