// SPDX-License-Identifier: Apache-2.0

package kcache

// Against kcache serve's synthetic cluster ($KCACHE_BIN): readers of a
// cache kcache sync made, and informers whose Go handlers run, write, and
// resume over the same cache with no LIST.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

type server struct {
	cmd *exec.Cmd
	url string
}

func startServer(t *testing.T) *server {
	t.Helper()
	bin := os.Getenv("KCACHE_BIN")
	if bin == "" {
		t.Fatal("KCACHE_BIN names the kcache tool")
	}
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--pods", "40", "--namespaces", "2",
		"--nodes", "2", "--creates", "0", "--updates", "0", "--relabels", "0", "--deletes", "0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	scanner := bufio.NewScanner(out)
	re := regexp.MustCompile(`serving on (http://\S+)`)
	for scanner.Scan() {
		if m := re.FindStringSubmatch(scanner.Text()); m != nil {
			go io.Copy(io.Discard, out)
			return &server{cmd, m[1]}
		}
	}
	t.Fatal("kcache serve did not start")
	return nil
}

func (s *server) metric(t *testing.T, name, labels string) float64 {
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(regexp.QuoteMeta(name+"{"+labels+"}") + ` (\S+)`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

func (s *server) post(t *testing.T, path, body string) {
	resp, err := http.Post(s.url+path, "application/json", bytes.NewBufferString(body))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("POST %s: %v %v", path, err, resp)
	}
	resp.Body.Close()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("not within 10 s: %s", what)
}

type pod struct {
	Metadata struct {
		Name, Namespace string
		Labels          map[string]string
	}
	Status struct{ Phase string }
}

func TestReadersOfACacheAndASnapshot(t *testing.T) {
	s := startServer(t)
	dir := filepath.Join(t.TempDir(), "cache")
	if out, err := exec.Command(os.Getenv("KCACHE_BIN"), "sync", "pods", "--server", s.url, "--cache",
		dir, "--until-synced").CombinedOutput(); err != nil {
		t.Fatalf("kcache sync: %v\n%s", err, out)
	}
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var names []string
	err = c.Each("pods", ListOptions{Namespace: "ns-1", LabelSelector: "track in (stable,canary)"},
		func(o json.RawMessage) error {
			p, err := Decode[pod](o)
			if err != nil {
				return err
			}
			if p.Metadata.Namespace != "ns-1" {
				return fmt.Errorf("%s is in %s", p.Metadata.Name, p.Metadata.Namespace)
			}
			names = append(names, p.Metadata.Name)
			return nil
		})
	if err != nil || len(names) == 0 || len(names) >= 40 {
		t.Fatalf("Each: %v, %d pods", err, len(names))
	}
	obj, err := c.Get("pods", "ns-1/"+names[0])
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := Decode[pod](obj); p.Metadata.Name != names[0] {
		t.Fatalf("Get: %s", obj)
	}
	if _, err := c.Get("pods", "ns-1/nope"); !IsNotFound(err) {
		t.Fatalf("a missing pod: %v", err)
	}
	if err := c.Each("pods", ListOptions{LabelSelector: "a in ("}, func(json.RawMessage) error { return nil }); !hasCode(err, CodeInvalidArgument) {
		t.Fatalf("a bad selector: %v", err)
	}
	if _, err := Open(dir + "-absent"); !IsNotFound(err) {
		t.Fatalf("an absent cache: %v", err)
	}
	w, err := OpenWriter(dir)
	if err != nil {
		t.Fatalf("a writer beside a reader: %v", err)
	}
	if _, err := OpenWriter(dir); !hasCode(err, CodeBusy) {
		t.Fatalf("a second writer: %v", err)
	}
	w.Close()
	if major, _ := CAPIVersion(); major != 1 {
		t.Fatalf("C API %d", major)
	}
}

func TestInformersHandlersWritesAndAResumeWithoutAList(t *testing.T) {
	s := startServer(t)
	for i := 0; i < 10; i++ {
		s.post(t, "/api/v1/namespaces/ns-0/configmaps", fmt.Sprintf(`{"metadata":{"name":"go-%d"}}`, i))
	}
	dir := filepath.Join(t.TempDir(), "informed")

	var mu sync.Mutex
	adds, initial, updates := 0, 0, 0
	deleted := map[string]bool{}
	handler := ResourceEventHandlerFuncs{
		AddFunc: func(obj json.RawMessage, inInitialList bool) {
			mu.Lock()
			defer mu.Unlock()
			adds++
			if inInitialList {
				initial++
			}
		},
		UpdateFunc: func(_, _ json.RawMessage) { mu.Lock(); updates++; mu.Unlock() },
		DeleteFunc: func(obj json.RawMessage, _ bool) {
			p, _ := Decode[pod](obj)
			mu.Lock()
			deleted[p.Metadata.Name] = true
			mu.Unlock()
		},
	}
	count := func() (int, int, int) { mu.Lock(); defer mu.Unlock(); return adds, initial, updates }

	cache, err := OpenWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewInformerFactory(cache, FactoryOptions{Server: s.url})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := f.ForResource("configmaps")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := f.ForResource("cm"); again != cms {
		t.Fatal("one informer per resource")
	}
	if _, err := f.ForResource("gadgets"); !IsNotFound(err) {
		t.Fatalf("an unknown resource: %v", err)
	}
	if err := cms.AddEventHandler(handler); err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitForCacheSync(30 * time.Second); err != nil || !cms.HasSynced() {
		t.Fatalf("WaitForCacheSync: %v", err)
	}
	eventually(t, "ten adds", func() bool { a, _, _ := count(); return a == 10 })
	if _, i, _ := count(); i != 10 {
		t.Fatalf("%d of the first adds were in the initial list", i)
	}

	created, err := cms.Create("ns-0", []byte(`{"metadata":{"name":"go-new"},"data":{"a":"1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create("ns-0", []byte(`{"metadata":{"name":"go-new"}}`)); !IsAlreadyExists(err) {
		t.Fatalf("a second create: %v", err)
	}
	patched, err := cms.Patch("ns-0", "go-new", MergePatchType, []byte(`{"data":{"b":"2"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Update("", created); !IsConflict(err) {
		t.Fatalf("a stale update: %v", err)
	}
	var meta struct {
		Metadata struct{ ResourceVersion string }
	}
	json.Unmarshal(patched, &meta)
	if err := cms.WaitForResourceVersion(meta.Metadata.ResourceVersion, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Lister().Get("ns-0", "go-new")
	if err != nil || !bytes.Contains(got, []byte(`"b":"2"`)) {
		t.Fatalf("Lister().Get: %v %s", err, got)
	}
	all, err := cms.Lister().List("")
	if err != nil || len(all) != 11 {
		t.Fatalf("Lister().List: %v, %d", err, len(all))
	}
	eventually(t, "the patch reaches the handler", func() bool { _, _, u := count(); return u >= 1 })
	watchLists := s.metric(t, "kcache_serve_watch_lists_total", `resource="configmaps"`)
	listed := s.metric(t, "kcache_serve_list_items_total", `resource="configmaps"`)
	if watchLists+listed == 0 {
		t.Fatal("the first sync neither listed nor watched with initial events")
	}
	f.Close()
	cache.Close()

	// A restart over the same cache: objects come from it, and the server
	// lists nothing.
	cache, err = OpenWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	f, err = NewInformerFactory(cache, FactoryOptions{Server: s.url})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cms, _ = f.ForResource("configmaps")
	mu.Lock()
	adds, initial, updates = 0, 0, 0
	mu.Unlock()
	cms.AddEventHandler(handler)
	f.Start()
	if err := f.WaitForCacheSync(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	eventually(t, "eleven adds from the cache", func() bool { a, _, _ := count(); return a == 11 })
	if err := cms.Delete("ns-0", "go-new"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the delete", func() bool { mu.Lock(); defer mu.Unlock(); return deleted["go-new"] })
	if _, i, _ := count(); i != 11 {
		t.Fatalf("%d of 11 adds were initial", i)
	}
	if got := s.metric(t, "kcache_serve_watch_lists_total", `resource="configmaps"`); got != watchLists {
		t.Fatalf("the restart watched with initial events: %v, was %v", got, watchLists)
	}
	if got := s.metric(t, "kcache_serve_list_items_total", `resource="configmaps"`); got > listed+1 {
		t.Fatalf("the restart listed %v objects", got-listed)
	}
}
