package dashboard

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/linuxguest"
	"github.com/govmm/govmm/vlapic"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// fakeSource is a VM's accounting without a VM: tests count exits on it
// the way vCPU threads do, through accounting's atomics.
type fakeSource struct {
	acct *accounting.VM
	mu   sync.Mutex
	st   []string
}

func newFake(n int) *fakeSource {
	f := &fakeSource{acct: accounting.NewVM(n), st: make([]string, n)}
	for i := range f.st {
		f.st[i] = "halted"
	}
	return f
}

func (f *fakeSource) Report() accounting.Report { return f.acct.Report() }

func (f *fakeSource) CPUs() []CPUView {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]CPUView, len(f.st))
	for i, s := range f.st {
		a := vlapic.State{CPU: i, ID: uint32(i), LDR: 1 << i, Mode: vlapic.ModeX2APIC, TPR: 0x20, PPR: 0x20}
		a.IRR[1] = 1 << 16 // vector 0x30
		a.ISR[7] = 1 << 31 // vector 0xff
		out[i] = CPUView{CPU: i, State: s, APIC: a}
	}
	return out
}

func (f *fakeSource) Phases() []linuxguest.PhaseRecord {
	return []linuxguest.PhaseRecord{{Name: "first console line", At: time.Second, Exits: 10}}
}

func (f *fakeSource) Info() Info {
	return Info{Mode: "cluster x2apic", CPUs: len(f.st), Kernel: "ipi.elf", Started: time.Now().Add(-time.Minute)}
}

var icrWrite = exitcause.APIC(true, true, 0x30)
var eoiWrite = exitcause.APIC(true, true, 0x0B)

// ipis has cpu 0 send n x2APIC-logical IPIs, each to cpu 1 and cpu 2, and
// the receivers take them with one EOI and one HLT each.
func (f *fakeSource) ipis(n int) {
	for range n {
		f.acct.CPUs[0].Exits.Count(icrWrite)
		f.acct.CPUs[0].IPISent[accounting.IPIX2APICLogical].Add(1)
		f.acct.CPUs[0].IPIDelivered[accounting.IPIX2APICLogical].Add(2)
		for _, c := range []int{1, 2} {
			f.acct.CPUs[c].Injected.Add(1)
			f.acct.CPUs[c].Exits.Count(eoiWrite)
			f.acct.CPUs[c].Exits.Count(exitcause.HLT)
		}
	}
}

func getJSON(t *testing.T, h http.Handler, path string, v any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	if rec.Code != 200 {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q", path, ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, rec.Body)
	}
}

// TestStateRates: two samples one second apart give exact rates, and the
// exits per IPI follow their definition (ipicost.go).
func TestStateRates(t *testing.T) {
	f := newFake(3)
	s := newServer(f, Options{})
	t0 := time.Unix(1000, 0)
	f.ipis(10)
	s.sampleNow(t0)
	f.ipis(50)
	f.acct.CPUs[1].Exits.Count(exitcause.Kick)
	s.sampleNow(t0.Add(2 * time.Second))
	var st State
	getJSON(t, s.Handler(), "/api/v1/state", &st)

	if st.IntervalS != 2 {
		t.Errorf("interval_s = %v, want 2", st.IntervalS)
	}
	if st.Total.Exits != 60*5+1 {
		t.Errorf("total exits = %d, want 301", st.Total.Exits)
	}
	// Second interval: 50 ICR + 100 EOI + 100 HLT + 1 kick in 2 s.
	if got, want := st.Total.ExitsPerSec, 251.0/2; got != want {
		t.Errorf("exits/s = %v, want %v", got, want)
	}
	if got := st.CPUs[0].ExitsPerSec; got != 25 {
		t.Errorf("cpu 0 exits/s = %v, want 25", got)
	}
	if got := st.CPUs[0].ByCausePerSec["msr_x2apic_icr_write"]; got != 25 {
		t.Errorf("cpu 0 ICR writes/s = %v, want 25", got)
	}
	if got := st.CPUs[1].ByClassPerSec["eoi"]; got != 25 {
		t.Errorf("cpu 1 EOIs/s = %v, want 25", got)
	}
	if st.Total.IPIsSentPerSec != 25 || st.Total.IPIsDeliveredPerSec != 50 || st.Total.InjectedPerSec != 50 {
		t.Errorf("IPI rates sent %v delivered %v injected %v, want 25 50 50",
			st.Total.IPIsSentPerSec, st.Total.IPIsDeliveredPerSec, st.Total.InjectedPerSec)
	}
	if len(st.CPUs[1].TopCauses) == 0 || st.CPUs[1].TopCauses[0].PerSec != 25 {
		t.Errorf("cpu 1 top causes %+v", st.CPUs[1].TopCauses)
	}
	// Receiver: (60 EOI + 60 HLT + 1 kick) / 60 injected.
	if got, want := st.CPUs[1].ReceiverExitsPerInjection, 121.0/60; got != want {
		t.Errorf("cpu 1 receiver exits per injection = %v, want %v", got, want)
	}
	if len(st.ExitsPerIPI) != 1 {
		t.Fatalf("exits_per_ipi = %+v, want one kind", st.ExitsPerIPI)
	}
	c := st.ExitsPerIPI[0]
	// 60 IPIs, 120 deliveries; 60 ICR exits; 240 + 1 receiver exits.
	if c.Kind != "x2apic_logical" || c.Sent != 60 || c.Delivered != 120 || c.DeliveriesPerIPI != 2 ||
		c.SenderExitsPerIPI != 1 || c.ReceiverExitsPerDelivery != 241.0/120 || c.ExitsPerIPI != 301.0/60 {
		t.Errorf("exits per IPI %+v", c)
	}
	a := st.CPUs[2].APIC
	if a.Mode != "x2apic" || a.LDR != 4 || a.TPR != 0x20 || len(a.IRR) != 1 || a.IRR[0] != 0x30 || a.ISR[0] != 0xff {
		t.Errorf("cpu 2 APIC %+v", a)
	}
	if st.Info.Mode != "cluster x2apic" || st.Phase != "first console line" || st.UptimeS < 59 {
		t.Errorf("info %+v phase %q uptime %v", st.Info, st.Phase, st.UptimeS)
	}
}

// TestStateShape checks the JSON field names the page, 'govmm top' and
// users' scripts rely on, and that lists are [] rather than null.
func TestStateShape(t *testing.T) {
	f := newFake(2)
	s := newServer(f, Options{})
	s.sampleNow(time.Now())
	var raw map[string]any
	getJSON(t, s.Handler(), "/api/v1/state", &raw)
	for _, k := range []string{"time", "uptime_s", "interval_s", "info", "phase", "phases", "cpus", "total",
		"exits_per_ipi", "platform", "sections", "unattributed_sender_exits", "unattributed_receiver_exits"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("state lacks %q", k)
		}
	}
	for _, k := range []string{"exits_per_ipi", "sections", "phases", "cpus", "devices", "ipi_latency"} {
		if _, ok := raw[k].([]any); !ok {
			t.Errorf("%q is %T, want a list", k, raw[k])
		}
	}
	cpu := raw["cpus"].([]any)[0].(map[string]any)
	for _, k := range []string{"cpu", "state", "exits", "exits_per_sec", "by_cause", "by_cause_per_sec", "by_class_per_sec",
		"top_causes", "ipi_sent", "ipi_delivered", "ipis_sent_per_sec", "injected_per_sec",
		"receiver_exits_per_injection", "apic"} {
		if _, ok := cpu[k]; !ok {
			t.Errorf("cpu lacks %q", k)
		}
	}
	// Every counter of accounting's table, under its report name (those
	// it leaves out while zero aside).
	for _, k := range accounting.CPUCounterTable {
		if _, ok := cpu[k.Name]; !ok && !k.OmitZero {
			t.Errorf("cpu lacks counter %q", k.Name)
		}
	}
	apic := cpu["apic"].(map[string]any)
	for _, k := range []string{"id", "ldr", "mode", "tpr", "ppr", "irr", "isr", "tmr", "timer"} {
		if _, ok := apic[k]; !ok {
			t.Errorf("apic lacks %q", k)
		}
	}
	if _, ok := apic["tmr"].([]any); !ok {
		t.Errorf("apic.tmr is %T, want a list", apic["tmr"])
	}
	plat := raw["platform"].(map[string]any)
	if _, ok := plat["remap_faults_by_reason"].(map[string]any); !ok {
		t.Errorf("platform.remap_faults_by_reason is %T, want an object", plat["remap_faults_by_reason"])
	}
}

func TestHistory(t *testing.T) {
	f := newFake(3)
	s := newServer(f, Options{History: 3})
	t0 := time.Unix(1000, 0)
	for i := range 5 {
		f.ipis(i)
		s.sampleNow(t0.Add(time.Duration(i) * time.Second))
	}
	var h History
	getJSON(t, s.Handler(), "/api/v1/history", &h)
	// The ring keeps 3 samples: 2 intervals, ending at t0+3s and t0+4s.
	if len(h.Samples) != 2 {
		t.Fatalf("history has %d samples, want 2: %+v", len(h.Samples), h)
	}
	last := h.Samples[1]
	if !last.Time.Equal(t0.Add(4*time.Second)) || last.ExitsPerSec != 20 || last.ByClassPerSec["icr"] != 4 ||
		last.ByClassPerSec["hlt"] != 8 || last.IPIsSentPerSec != 4 || last.IPIsDeliveredPerSec != 8 {
		t.Errorf("last history sample %+v", last)
	}
	if len(h.Classes) != int(numClasses) {
		t.Errorf("classes %v", h.Classes)
	}
}

func TestMetrics(t *testing.T) {
	f := newFake(3)
	f.ipis(3)
	f.acct.Platform.IOAPICFired.Add(7)
	f.acct.CPUs[2].Inject(0xec)
	f.acct.CPUs[2].Withdraw(0xec)
	f.acct.CPUs[1].PVEOIs.Add(4)
	f.acct.Platform.Fault(0x26)
	f.acct.Platform.Fault(0x26)
	f.acct.Platform.Fault(0x21)
	dev := accounting.NewDeviceIRQs("virtio-blk", "00:02.0", 3, 3)
	dev.Delivered(2, 1)
	dev.Delivered(2, 1)
	dev.Refused(2)
	dev.Queues = func() []accounting.QueueReport {
		return []accounting.QueueReport{{Queue: 1, Kicks: 5, Completed: 40, Interrupts: 2, Suppressed: 6}}
	}
	f.acct.Devices = []*accounting.DeviceIRQs{dev}
	// A section on KVM's LAPIC (--lapic=kvm): KVM's statistics over it.
	kvmNow := []accounting.KVMCounts{{}, {}, {}}
	f.acct.KVM = func() ([]accounting.KVMCounts, error) { return append([]accounting.KVMCounts(nil), kvmNow...), nil }
	f.acct.Mark(0, 4)
	kvmNow[1][accounting.KVMHaltExits], kvmNow[2][accounting.KVMHaltExits] = 5, 6
	f.acct.Mark(0, 0)
	s := newServer(f, Options{})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	want := func(name string, labels map[string]string, v float64) {
		t.Helper()
		fam, ok := fams[name]
		if !ok {
			t.Errorf("no %s in /metrics", name)
			return
		}
	next:
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue next
				}
			}
			got := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			if got != v {
				t.Errorf("%s%v = %v, want %v", name, labels, got, v)
			}
			return
		}
		t.Errorf("no %s%v in /metrics", name, labels)
	}
	want("govmm_exits_total", map[string]string{"cpu": "0", "cause": "msr_x2apic_icr_write"}, 3)
	want("govmm_exits_total", map[string]string{"cpu": "2", "cause": "hlt"}, 3)
	want("govmm_ipis_sent_total", map[string]string{"cpu": "0", "kind": "x2apic_logical"}, 3)
	want("govmm_ipis_delivered_total", map[string]string{"cpu": "0", "kind": "x2apic_logical"}, 6)
	want("govmm_injected_total", map[string]string{"cpu": "1"}, 3)
	want("govmm_kicks_total", map[string]string{"cpu": "1"}, 0)
	want("govmm_injections_withdrawn_total", map[string]string{"cpu": "2"}, 1)
	want("govmm_injected_total", map[string]string{"cpu": "2"}, 3)
	want("govmm_pv_eois_total", map[string]string{"cpu": "1"}, 4)
	want("govmm_vcpu_state", map[string]string{"cpu": "1", "state": "halted"}, 1)
	want("govmm_vcpu_state", map[string]string{"cpu": "1", "state": "guest"}, 0)
	want("govmm_remap_faults_total", map[string]string{"reason": "reason_0x26"}, 2)
	want("govmm_remap_faults_total", map[string]string{"reason": "reason_0x21"}, 1)
	want("govmm_ioapic_fired_total", nil, 7)
	want("govmm_device_msix_interrupts_total", map[string]string{"device": "virtio-blk", "address": "00:02.0", "vector": "2", "cpu": "1"}, 2)
	want("govmm_device_msix_undelivered_total", map[string]string{"address": "00:02.0", "vector": "2", "outcome": "refused"}, 1)
	want("govmm_virtqueue_events_total", map[string]string{"device": "virtio-blk", "queue": "1", "event": "suppressed"}, 6)
	want("govmm_virtqueue_events_total", map[string]string{"device": "virtio-blk", "queue": "1", "event": "completed"}, 40)
	want("govmm_apic_tpr", map[string]string{"cpu": "0"}, 0x20)
	want("govmm_info", map[string]string{"mode": "cluster x2apic"}, 1)
	want("govmm_section_kvm_stat_total", map[string]string{"section": "4", "stat": "halt_exits"}, 11)
	if fams["govmm_exits_total"].GetType().String() != "COUNTER" || fams["govmm_vcpu_state"].GetType().String() != "GAUGE" {
		t.Errorf("types: exits %v, state %v", fams["govmm_exits_total"].GetType(), fams["govmm_vcpu_state"].GetType())
	}
	// The collector is consistent (no duplicate series, valid names).
	if problems, err := testutil.CollectAndLint(collector{f}); err != nil || len(problems) > 0 {
		for _, p := range problems {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
		if err != nil {
			t.Error(err)
		}
	}
	if n := testutil.CollectAndCount(collector{f}, "govmm_vcpu_state"); n != 3*len(vcpuStates) {
		t.Errorf("%d govmm_vcpu_state series, want %d", n, 3*len(vcpuStates))
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	s := newServer(newFake(1), Options{})
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "localhost:0"} {
		l, err := s.Listen(addr)
		if err != nil {
			if strings.Contains(addr, "::1") && strings.Contains(err.Error(), "cannot listen") {
				continue // a host without IPv6
			}
			t.Errorf("Listen(%q): %v", addr, err)
			continue
		}
		l.Close()
	}
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0", "192.0.2.1:0", "example.com:0", "nohost"} {
		if l, err := s.Listen(addr); err == nil {
			l.Close()
			t.Errorf("Listen(%q) succeeded, want refused", addr)
		} else if strings.Count(err.Error(), "\n") != 0 {
			t.Errorf("Listen(%q): error is not one line: %v", addr, err)
		}
	}
	remote := newServer(newFake(1), Options{AllowRemote: true})
	l, err := remote.Listen("0.0.0.0:0")
	if err != nil {
		t.Fatalf("Listen 0.0.0.0 with AllowRemote: %v", err)
	}
	l.Close()
}

// TestServePage: the page is served, self-contained, and polls the API.
func TestServePage(t *testing.T) {
	s := New(newFake(2), Options{Interval: 10 * time.Millisecond})
	l, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	resp, err := http.Get("http://" + l.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type %q", ct)
	}
	html := string(body)
	for _, want := range []string{"/api/v1/state", "/api/v1/history", `id="total-exits"`, `id="exits-per-sec"`,
		`id="cpu-body"`, `id="chart"`, `id="ipi-cost"`, `id="remap-faults"`, `"cpu-" + c.cpu`} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, bad := range []string{"http://", "https://", "//cdn"} {
		if strings.Contains(html, bad) {
			t.Errorf("page refers to %q: it must be self-contained", bad)
		}
	}
	if r, err := http.Get("http://" + l.Addr().String() + "/nothing"); err != nil || r.StatusCode != 404 {
		t.Errorf("GET /nothing: %v %v", r.StatusCode, err)
	}
	// The sampler runs on its own: two samples come, however slowly the
	// machine runs it (the deadline only ends a sampler that never does).
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n < 2; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n = s.ring.n
		s.mu.Unlock()
		if n < 2 && time.Now().After(deadline) {
			t.Errorf("the sampler took %d samples in 10s at 10ms", n)
			break
		}
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve after Close: %v", err)
	}
}

// TestClasses: the dashboard's icr class (sender exits of exits per IPI,
// with pv_send_ipi) is the ICR and SELF_IPI registers only, not the LAPIC
// timer's initial count (timer_icr); every accounting class has a
// dashboard class.
func TestClasses(t *testing.T) {
	for k := exitcause.Class(0); k < exitcause.NumClasses; k++ {
		want := k == exitcause.ClassICR || k == exitcause.ClassSelfIPI
		if got := ofAccounting[k] == classICR; got != want {
			t.Errorf("accounting class %s in the icr class: %v", k, got)
		}
	}
	for name, want := range map[string]class{
		"msr_x2apic_icr_write": classICR, "mmio_apic_icr2_write": classICR, "msr_x2apic_self_ipi_write": classICR,
		"msr_x2apic_timer_icr_write": classAPICOther, "mmio_apic_timer_icr_write": classAPICOther,
		"msr_x2apic_eoi_write": classEOI, "mmio_ioapic_eoi_write": classIOAPIC, "kick": classKick,
		"kick_spurious": classOther, "recover_xsave": classRecover, "no_such_cause": classOther,
		"msr_pv_send_ipi": classPVIPI, "syscall_doorbell": classOther,
	} {
		if got := classOf(name); got != want {
			t.Errorf("classOf(%q) = %s, want %s", name, got, want)
		}
	}
	// An accounting class the dashboard has a class of the same name for
	// is that class; the others are folded into the one listed.
	folded := map[exitcause.Class]class{exitcause.ClassSelfIPI: classICR, exitcause.ClassKickSpurious: classOther,
		exitcause.ClassDoorbell: classOther}
	byName := map[string]class{}
	for c := range numClasses {
		byName[c.String()] = c
	}
	for k := exitcause.Class(0); k < exitcause.NumClasses; k++ {
		want, ok := folded[k]
		if !ok {
			if want, ok = byName[k.String()]; !ok {
				t.Errorf("accounting class %s has no dashboard class of its name and is not folded", k)
				continue
			}
		}
		if ofAccounting[k] != want {
			t.Errorf("accounting class %s is dashboard class %s, want %s", k, ofAccounting[k], want)
		}
	}
}

// TestPVIPISender: the PV send-IPI is a class of its own and, like an ICR
// write, a sender exit of the IPIs of its interval.
func TestPVIPISender(t *testing.T) {
	f := newFake(2)
	s := newServer(f, Options{})
	t0 := time.Unix(1000, 0)
	s.sampleNow(t0)
	for range 4 {
		f.acct.CPUs[0].Exits.Count(exitcause.MSRPVIPI)
		f.acct.CPUs[0].IPISent[accounting.IPIParavirt].Add(1)
		f.acct.CPUs[0].IPIDelivered[accounting.IPIParavirt].Add(1)
		f.acct.CPUs[1].Exits.Count(eoiWrite)
	}
	s.sampleNow(t0.Add(time.Second))
	var st State
	getJSON(t, s.Handler(), "/api/v1/state", &st)
	if got := st.CPUs[0].ByClassPerSec; got["pv_send_ipi"] != 4 || got["other"] != 0 {
		t.Errorf("cpu 0 classes per second %v, want pv_send_ipi 4 and other 0", got)
	}
	if len(st.ExitsPerIPI) != 1 || st.ExitsPerIPI[0].Kind != "pv" || st.ExitsPerIPI[0].SenderExitsPerIPI != 1 ||
		st.ExitsPerIPI[0].ExitsPerIPI != 2 {
		t.Errorf("exits per IPI %+v, want pv: 1 sender exit, 2 in all", st.ExitsPerIPI)
	}
}

// TestMetricsCoverTable: every accounting counter with a metric is
// exported under it, with its help, whatever its value.
func TestMetricsCoverTable(t *testing.T) {
	f := newFake(2)
	var want []string
	for _, k := range accounting.CPUCounterTable {
		if k.Metric != "" {
			want = append(want, k.Metric)
		}
	}
	for _, k := range accounting.PlatformCounterTable {
		if k.Metric != "" {
			want = append(want, k.Metric)
		}
	}
	for _, m := range want {
		if n := testutil.CollectAndCount(collector{f}, m); n == 0 {
			t.Errorf("no %s series", m)
		}
	}
	if n := testutil.CollectAndCount(collector{f}, "govmm_injected_total"); n != 2 {
		t.Errorf("%d govmm_injected_total series, want one per vCPU", n)
	}
	if n := testutil.CollectAndCount(collector{f}, "govmm_device_irqs_total"); n != 2 {
		t.Errorf("%d govmm_device_irqs_total series, want physical and logical", n)
	}
}
