// SPDX-License-Identifier: Apache-2.0

// The client-go peer of kcache's informer benchmark: a v1.20
// SharedInformerFactory pod informer, built from Debian's kubernetes source
// by tools/bench/build-peer. It prints one JSON line when the informer has
// synced and exits, or with --follow-until once a pod appears after that.
// With --create it creates pods instead.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kubernetes/cmd/kcache-peerutil"
)

func main() {
	start := time.Now()
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	server := flag.String("server", "", "API server URL (plain http, no credentials) when there is no kubeconfig")
	create := flag.Int("create", 0, "create pods bench-<i> for i in [--from, --create) in --namespace, then exit")
	from := flag.Int("from", 0, "first pod index for --create")
	namespace := flag.String("namespace", "bench", "namespace for --create")
	objectBytes := flag.Int("object-bytes", 6800, "approximate JSON size of each created pod")
	followUntil := flag.String("follow-until", "", "after syncing, run until pod NAMESPACE/NAME is in the informer's store")
	followTimeout := flag.Duration("follow-timeout", time.Minute, "how long --follow-until waits")
	flag.Parse()

	var cfg *rest.Config
	var err error
	if *kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
	} else {
		cfg = &rest.Config{Host: *server}
	}
	cfg.QPS = 5000
	cfg.Burst = 10000
	client := kubernetes.NewForConfigOrDie(cfg)

	if *create > 0 {
		if err := createPods(client, *namespace, *from, *create, *objectBytes); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		return
	}

	factory := informers.NewSharedInformerFactory(client, 0)
	informer := factory.Core().V1().Pods().Informer()
	var adds int64
	informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(interface{}) { atomic.AddInt64(&adds, 1) },
	})
	stop := make(chan struct{})
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		fmt.Fprintln(os.Stderr, "error: the informer did not sync")
		os.Exit(1)
	}
	synced := time.Since(start)
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	json.NewEncoder(os.Stdout).Encode(map[string]interface{}{
		"synced_seconds": synced.Seconds(),
		"objects":        len(informer.GetStore().ListKeys()),
		"heap_bytes":     m.HeapAlloc,
	})
	if *followUntil == "" {
		return
	}
	deadline := time.Now().Add(*followTimeout)
	for {
		if _, exists, _ := informer.GetStore().GetByKey(*followUntil); exists {
			json.NewEncoder(os.Stdout).Encode(map[string]interface{}{
				"followed": *followUntil,
				"objects":  len(informer.GetStore().ListKeys()),
				"adds":     atomic.LoadInt64(&adds),
			})
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "error: pod", *followUntil, "did not appear within", *followTimeout)
			os.Exit(1)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func createPods(client kubernetes.Interface, ns string, from, to, objectBytes int) error {
	pad := strings.Repeat("x", objectBytes-900)
	return peerutil.CreateEach(client, ns, from, to, func(ctx context.Context, i int) error {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:        fmt.Sprintf("bench-%06d", i),
				Labels:      map[string]string{"app": fmt.Sprintf("app-%d", i%50), "tier": "web"},
				Annotations: map[string]string{"bench.kcache.io/pad": pad},
			},
			Spec: corev1.PodSpec{
				NodeName:   fmt.Sprintf("node-%d", i%100),
				Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}},
			},
		}
		_, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
}
