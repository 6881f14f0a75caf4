// SPDX-License-Identifier: Apache-2.0

// Package peerutil holds what the client-go peers of the benchmarks share.
// tools/bench/build-peer copies it into the kubernetes source tree as
// k8s.io/kubernetes/cmd/kcache-peerutil.
package peerutil

import (
	"context"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CreateEach creates namespace ns (if missing), then calls create(i) for
// every i in [from, to) on 32 goroutines. An AlreadyExists from create is
// not an error (a bench run again over the same cluster). Returns the first
// other error.
func CreateEach(client kubernetes.Interface, ns string, from, to int, create func(ctx context.Context, i int) error) error {
	ctx := context.Background()
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return Each(from, to, func(i int) error {
		if err := create(ctx, i); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}

// Each calls f(i) for every i in [from, to) on 32 goroutines and returns
// the first error; after one, no new call starts.
func Each(from, to int, f func(i int) error) error {
	next := int64(from) - 1
	var failed atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(atomic.AddInt64(&next, 1))
				if i >= to || failed.Load() != nil {
					return
				}
				if err := f(i); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		return err
	}
	return nil
}
