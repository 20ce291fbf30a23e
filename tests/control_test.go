package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govmm/govmm/dashboard"
	"github.com/govmm/govmm/vmm"
)

// TestControlEndpoint pauses storm.elf through the dashboard's control
// endpoint and resumes it: while paused the JSON API shows every vCPU
// parked, a request without the token is refused and changes nothing, and
// the resumed storm's exact counts pass. A snapshot taken through the
// endpoint (refused while the endpoint holds a pause) restores to the
// storm's same verdict.
func TestControlEndpoint(t *testing.T) {
	s := startStorm(t, 3000, nil)
	vm, con, done := s.vm, s.con, s.done
	dir := filepath.Join(t.TempDir(), "snap")
	snap := func() (vmm.SnapshotInfo, error) { return vm.Snapshot(dir, "test") }
	srv := dashboard.New(dashboard.VMSource(vm, nil, dashboard.Info{Kernel: s.path}),
		dashboard.Options{Interval: 50 * time.Millisecond, Control: dashboard.VMControl(vm, snap), ControlToken: "t0ken"})
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	post := func(what, token string) int {
		req, _ := http.NewRequest("POST", hs.URL+"/api/v1/control/"+what, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Logf("%s: %d %s", what, resp.StatusCode, b)
		}
		return resp.StatusCode
	}
	if code := post("pause", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("pause with a wrong token: %d", code)
	}
	if code := post("pause", "t0ken"); code != http.StatusOK {
		t.Fatalf("pause: %d", code)
	}
	time.Sleep(150 * time.Millisecond) // a sample or two of the paused VM
	resp, err := http.Get(hs.URL + "/api/v1/state")
	if err != nil {
		t.Fatal(err)
	}
	var st dashboard.State
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.CPUs {
		if c.State != "parked" {
			t.Errorf("vCPU %d is %q while paused, want parked", c.CPU, c.State)
		}
	}
	if code := post("snapshot", "t0ken"); code != http.StatusConflict {
		t.Errorf("snapshot while the endpoint holds a pause: %d, want 409", code)
	}
	if code := post("resume", "t0ken"); code != http.StatusOK {
		t.Fatalf("resume: %d", code)
	}
	snapped := post("snapshot", "t0ken")
	res := <-done
	if out := con.String(); res.Err != nil || res.Status != 1 || !strings.Contains(out, "PASS storm") {
		t.Fatalf("storm after a pause: status %d, %v\n%s", res.Status, res.Err, out)
	}
	if snapped != http.StatusOK {
		t.Fatalf("snapshot through the endpoint: %d", snapped)
	}
	restoreAndRun(t, dir, nil)
}
