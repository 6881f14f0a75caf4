// SPDX-License-Identifier: Apache-2.0

// The client-go peer of kcache's wide benchmark (tools/bench/wide-bench): a
// v1.20 dynamic SharedInformerFactory with one informer for each custom
// resource type the benchmark created, built from Debian's kubernetes source
// by tools/bench/build-peer. It finds the types with one LIST of
// CustomResourceDefinitions (by label), starts every informer, and prints one
// JSON line when all have synced.
//
// With --create-types N it creates the types instead: N definitions spread
// over --groups API groups, each established and given --objects objects.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kubernetes/cmd/kcache-peerutil"
)

const label = "bench.kcache.io/wide"

func main() {
	start := time.Now()
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	createTypes := flag.Int("create-types", 0, "create this many custom resource types, then exit")
	groups := flag.Int("groups", 4, "API groups the created types are spread over")
	objects := flag.Int("objects", 5, "objects created of each type")
	namespace := flag.String("namespace", "wide", "namespace of the created objects")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	cfg.QPS = 5000
	cfg.Burst = 10000
	if *createTypes > 0 {
		if err := create(cfg, *createTypes, *groups, *objects, *namespace); err != nil {
			fail(err)
		}
		return
	}

	ext := apiext.NewForConfigOrDie(cfg)
	crds, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(context.Background(),
		metav1.ListOptions{LabelSelector: label + "=true"})
	if err != nil {
		fail(err)
	}
	client := dynamic.NewForConfigOrDie(cfg)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	var synced []cache.InformerSynced
	var informers []cache.SharedIndexInformer
	for _, crd := range crds.Items {
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Resource: crd.Spec.Names.Plural}
		informer := factory.ForResource(gvr).Informer()
		informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(interface{}) {}})
		informers = append(informers, informer)
		synced = append(synced, informer.HasSynced)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, synced...) {
		fail(fmt.Errorf("the informers did not sync"))
	}
	seconds := time.Since(start).Seconds()
	n := 0
	for _, informer := range informers {
		n += len(informer.GetStore().ListKeys())
	}
	threads := 0
	if entries, err := os.ReadDir("/proc/self/task"); err == nil {
		threads = len(entries)
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	json.NewEncoder(os.Stdout).Encode(map[string]interface{}{
		"synced_seconds": seconds,
		"types":          len(informers),
		"objects":        n,
		"goroutines":     runtime.NumGoroutine(),
		"threads":        threads,
		"heap_bytes":     m.HeapAlloc,
	})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(1)
}

// create makes n types wide<i>s.g<i%groups>.wide.kcache.io (namespaced,
// version v1, any fields), waits until each is established, and creates
// `objects` objects of each in namespace ns, 32 types at a time.
func create(cfg *rest.Config, n, groups, objects int, ns string) error {
	ctx := context.Background()
	ext := apiext.NewForConfigOrDie(cfg)
	client := dynamic.NewForConfigOrDie(cfg)
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	nsObj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": ns}}}
	if _, err := client.Resource(nsGVR).Create(ctx, nsObj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	preserve := true
	return peerutil.Each(0, n, func(i int) error {
		group := fmt.Sprintf("g%d.wide.kcache.io", i%groups)
		plural := fmt.Sprintf("wide%ds", i)
		crd := &apiextv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group, Labels: map[string]string{label: "true"}},
			Spec: apiextv1.CustomResourceDefinitionSpec{
				Group: group,
				Names: apiextv1.CustomResourceDefinitionNames{
					Plural: plural, Singular: fmt.Sprintf("wide%d", i), Kind: fmt.Sprintf("Wide%d", i),
					ListKind: fmt.Sprintf("Wide%dList", i)},
				Scope: apiextv1.NamespaceScoped,
				Versions: []apiextv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: &preserve}},
				}},
			},
		}
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		// Objects can be created once the type is established and served.
		gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
		for j := 0; j < objects; j++ {
			obj := &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": group + "/v1", "kind": fmt.Sprintf("Wide%d", i),
				"metadata": map[string]interface{}{"name": fmt.Sprintf("obj-%d", j), "labels": map[string]interface{}{"app": "wide"}},
				"spec":     map[string]interface{}{"replicas": int64(j), "note": "a wide cluster's object"},
			}}
			for attempt := 0; ; attempt++ {
				_, err := client.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
				if err == nil || apierrors.IsAlreadyExists(err) {
					break
				}
				if attempt > 300 {
					return fmt.Errorf("%s: %v", plural+"."+group, err)
				}
				time.Sleep(100 * time.Millisecond) // not served yet
			}
		}
		return nil
	})
}
