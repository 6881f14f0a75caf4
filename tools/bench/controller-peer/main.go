// SPDX-License-Identifier: Apache-2.0

// The client-go v1.20 peer of docs/examples/controller.cc, for
// tools/bench/controller-bench: the same controller (a ConfigMap with given
// data in every namespace matching a selector, owned by the namespace) in
// client-go's sample-controller shape. It prints "first reconcile" when its
// first reconcile ends and stops on SIGTERM. With --create it creates
// ConfigMaps instead (the benchmark's cached objects) and exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/kubernetes/cmd/kcache-peerutil"
)

type controller struct {
	client     kubernetes.Interface
	selector   labels.Selector
	name       string
	data       map[string]string
	namespaces corelisters.NamespaceLister
	configmaps corelisters.ConfigMapLister
	queue      workqueue.RateLimitingInterface
	first      sync.Once
}

func (c *controller) work() {
	for {
		key, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		ns := key.(string)
		if err := c.reconcile(ns); err != nil {
			fmt.Printf("retrying %s: %v\n", ns, err)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
		c.first.Do(func() { fmt.Println("first reconcile") })
	}
}

func (c *controller) reconcile(name string) error {
	ctx := context.Background()
	ns, err := c.namespaces.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	wanted := err == nil && ns.DeletionTimestamp == nil && c.selector.Matches(labels.Set(ns.Labels))
	cm, cmErr := c.configmaps.ConfigMaps(name).Get(c.name)
	if cmErr != nil && !apierrors.IsNotFound(cmErr) {
		return cmErr
	}
	if !wanted {
		if cmErr != nil || !metav1.IsControlledBy(cm, ns) {
			return nil
		}
		uid := cm.UID
		err := c.client.CoreV1().ConfigMaps(name).Delete(ctx, c.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if cmErr != nil {
		isController := true
		_, err := c.client.CoreV1().ConfigMaps(name).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:   c.name,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "kcache-example-controller"},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Namespace", Name: name, UID: ns.UID, Controller: &isController,
				}},
			},
			Data: c.data,
		}, metav1.CreateOptions{})
		return err
	}
	if reflect.DeepEqual(cm.Data, c.data) {
		return nil
	}
	updated := cm.DeepCopy()
	updated.Data = c.data
	_, err = c.client.CoreV1().ConfigMaps(name).Update(ctx, updated, metav1.UpdateOptions{})
	return err
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	selector := flag.String("selector", "kcache.io/config=enabled", "namespaces to give a ConfigMap")
	name := flag.String("configmap", "kcache-config", "the ConfigMap's name")
	workers := flag.Int("workers", 2, "worker goroutines")
	create := flag.Int("create", 0, "create ConfigMaps bench-<i> for i in [0, --create) in --namespace, then exit")
	namespace := flag.String("namespace", "bench", "namespace for --create")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	cfg.QPS = 5000
	cfg.Burst = 10000
	client := kubernetes.NewForConfigOrDie(cfg)
	if *create > 0 {
		if err := createConfigMaps(client, *namespace, *create); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		return
	}
	sel, err := labels.Parse(*selector)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}

	factory := informers.NewSharedInformerFactory(client, 0)
	nsInformer := factory.Core().V1().Namespaces()
	cmInformer := factory.Core().V1().ConfigMaps()
	c := &controller{
		client: client, selector: sel, name: *name, data: map[string]string{"greeting": "hello"},
		namespaces: nsInformer.Lister(), configmaps: cmInformer.Lister(),
		queue: workqueue.NewNamedRateLimitingQueue(workqueue.DefaultControllerRateLimiter(), "namespaces"),
	}
	nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.queue.Add(obj.(*corev1.Namespace).Name) },
		UpdateFunc: func(_, obj interface{}) { c.queue.Add(obj.(*corev1.Namespace).Name) },
		DeleteFunc: func(obj interface{}) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				c.queue.Add(key)
			}
		},
	})
	enqueueOwner := func(obj interface{}) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		ns, cmName, _ := cache.SplitMetaNamespaceKey(key)
		if cmName == c.name {
			c.queue.Add(ns)
		}
	}
	cmInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueOwner,
		UpdateFunc: func(_, obj interface{}) { enqueueOwner(obj) },
		DeleteFunc: enqueueOwner,
	})

	stop := make(chan struct{})
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, nsInformer.Informer().HasSynced, cmInformer.Informer().HasSynced) {
		fmt.Fprintln(os.Stderr, "error: the informers did not sync")
		os.Exit(1)
	}
	fmt.Println("synced")
	for i := 0; i < *workers; i++ {
		go wait.Until(c.work, time.Second, stop)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	close(stop)
	c.queue.ShutDown()
}

func createConfigMaps(client kubernetes.Interface, ns string, n int) error {
	pad := strings.Repeat("x", 900)
	return peerutil.CreateEach(client, ns, 0, n, func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%06d", i), Labels: map[string]string{"app": fmt.Sprintf("app-%d", i%50)}},
			Data:       map[string]string{"pad": pad},
		}
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
}
