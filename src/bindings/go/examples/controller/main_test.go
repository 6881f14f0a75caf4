// SPDX-License-Identifier: Apache-2.0

package main

// The controller against kcache serve ($KCACHE_BIN): it configures the
// labelled namespaces; SIGKILLed, it misses a label and a hand edit; started
// again over its cache it converges on both, and the server's metrics show
// that it listed nothing.

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// The test binary is the controller too, for the test to start and kill.
	if os.Getenv("KCACHE_GO_CONTROLLER") == "1" {
		os.Args = append([]string{os.Args[0]}, strings.Fields(os.Getenv("KCACHE_GO_CONTROLLER_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// proc is a started process and the lines it has printed.
type proc struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
}

func start(t *testing.T, cmd *exec.Cmd) *proc {
	p := &proc{cmd: cmd}
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, s.Text())
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return p
}

// waitFor returns the first line matching re, waiting up to 30 s.
func (p *proc) waitFor(t *testing.T, re string) []string {
	t.Helper()
	r := regexp.MustCompile(re)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		p.mu.Lock()
		for _, l := range p.lines {
			if m := r.FindStringSubmatch(l); m != nil {
				p.mu.Unlock()
				return m
			}
		}
		p.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Fatalf("no line matching %q in:\n%s", re, strings.Join(p.lines, "\n"))
	return nil
}

func request(t *testing.T, method, url, contentType, body string) string {
	req, _ := http.NewRequest(method, url, bytes.NewBufferString(body))
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return string(b)
}

func metric(t *testing.T, url, name, resource string) float64 {
	text := request(t, "GET", url+"/metrics", "", "")
	m := regexp.MustCompile(regexp.QuoteMeta(name+`{resource="`+resource+`"}`) + ` (\S+)`).FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func TestConvergesAfterSIGKILLWithoutAList(t *testing.T) {
	serve := start(t, exec.Command(os.Getenv("KCACHE_BIN"), "serve", "--listen", "127.0.0.1:0",
		"--pods", "10", "--namespaces", "3", "--creates", "0", "--updates", "0", "--relabels", "0",
		"--deletes", "0"))
	url := serve.waitFor(t, `serving on (http://\S+)`)[1]
	label := func(ns string) {
		request(t, "PATCH", url+"/api/v1/namespaces/"+ns, "application/merge-patch+json",
			`{"metadata":{"labels":{"kcache.io/config":"enabled"}}}`)
	}
	cache := filepath.Join(t.TempDir(), "cache")
	controller := func() *proc {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "KCACHE_GO_CONTROLLER=1",
			"KCACHE_GO_CONTROLLER_ARGS=--cache "+cache+" --server "+url+" --data a=1")
		return start(t, cmd)
	}

	label("ns-0")
	first := controller()
	first.waitFor(t, `created ns-0/kcache-config`)
	got := request(t, "GET", url+"/api/v1/namespaces/ns-0/configmaps/kcache-config", "", "")
	if !strings.Contains(got, `"a":"1"`) || !strings.Contains(got, `"kind":"Namespace"`) {
		t.Fatalf("the ConfigMap: %s", got)
	}
	first.cmd.Process.Signal(syscall.SIGKILL)
	first.cmd.Wait()

	// While it is down: a namespace labelled, the ConfigMap edited by hand.
	label("ns-2")
	request(t, "PATCH", url+"/api/v1/namespaces/ns-0/configmaps/kcache-config",
		"application/merge-patch+json", `{"data":{"a":"changed"}}`)
	lists := map[string][2]float64{}
	for _, r := range []string{"namespaces", "configmaps"} {
		lists[r] = [2]float64{metric(t, url, "kcache_serve_list_items_total", r),
			metric(t, url, "kcache_serve_watch_lists_total", r)}
	}

	second := controller()
	second.waitFor(t, `created ns-2/kcache-config`)
	second.waitFor(t, `restored ns-0/kcache-config`)
	got = request(t, "GET", url+"/api/v1/namespaces/ns-0/configmaps/kcache-config", "", "")
	if !strings.Contains(got, `"a":"1"`) {
		t.Fatalf("not restored: %s", got)
	}
	for r, before := range lists {
		if items := metric(t, url, "kcache_serve_list_items_total", r); items > before[0]+1 {
			t.Errorf("%s: the restart listed %v objects", r, items-before[0])
		}
		if wl := metric(t, url, "kcache_serve_watch_lists_total", r); wl != before[1] {
			t.Errorf("%s: the restart watched with every object (%v, was %v)", r, wl, before[1])
		}
	}
	second.cmd.Process.Signal(syscall.SIGTERM)
	second.waitFor(t, `stopping on terminated`)
}
