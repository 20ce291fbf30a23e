package dashboard

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/linuxguest"
	"github.com/govmm/govmm/vlapic"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultAddr is where the dashboard listens unless told otherwise, and
// where 'govmm top' looks for it.
const DefaultAddr = "127.0.0.1:8411"

// Options configure a Server.
type Options struct {
	// Interval is how often the sampler copies the counters: the window
	// of every rate. Default 1s.
	Interval time.Duration
	// History is how many samples /api/v1/history keeps. Default 300.
	History int
	// AllowRemote lets Listen bind a non-loopback address. The read-only
	// dashboard has no authentication; it is for the machine the VM runs
	// on.
	AllowRemote bool
	// Control and ControlToken, both set, add the control endpoint
	// (control.go): POST /api/v1/control/pause and .../resume, each
	// request carrying the token.
	Control      Controller
	ControlToken string
}

// Server is the dashboard of one Source.
type Server struct {
	src  Source
	opts Options
	mux  *http.ServeMux

	mu      sync.Mutex // guards the sampled state below
	ring    *ring
	prevRep *accounting.Report // the report of the sample before curRep
	curRep  *accounting.Report
	prevAt  time.Time
	curAt   time.Time
	attrib  ipiAttrib

	stop     chan struct{}
	stopOnce sync.Once
	sampling sync.WaitGroup
	srvMu    sync.Mutex
	servers  []*http.Server
}

// New returns the dashboard of src and starts its sampler; Close stops it.
func New(src Source, opts Options) *Server {
	s := newServer(src, opts)
	s.sampleNow(time.Now())
	s.sampling.Add(1)
	go s.sampler()
	return s
}

// newServer builds a Server without the sampler goroutine (tests sample by
// hand with chosen times).
func newServer(src Source, opts Options) *Server {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.History < 2 {
		opts.History = 300
	}
	s := &Server{src: src, opts: opts, mux: http.NewServeMux(), ring: newRing(opts.History), stop: make(chan struct{})}
	// A registry per server, not the global default: two dashboards (two
	// VMs, or tests) must not share collectors.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{src})
	s.mux.HandleFunc("GET /api/v1/state", s.handleState)
	s.mux.HandleFunc("GET /api/v1/history", s.handleHistory)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	s.mux.HandleFunc("GET /{$}", s.handlePage)
	s.registerControl(opts.Control, opts.ControlToken)
	return s
}

func (s *Server) sampler() {
	defer s.sampling.Done()
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.sampleNow(now)
		}
	}
}

// sampleNow copies the counters as the sample at time at.
func (s *Server) sampleNow(at time.Time) {
	r := s.src.Report()
	smp := newSample(at, &r)
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.ring.last(0)
	if prev == nil || len(prev.exits) != len(smp.exits) {
		prev = zeroSample(smp)
	}
	s.attrib.add(prev, smp)
	s.ring.push(smp)
	s.prevRep, s.prevAt = s.curRep, s.curAt
	s.curRep, s.curAt = &r, at
}

// Handler is the dashboard's HTTP handler, for embedding in another server.
func (s *Server) Handler() http.Handler { return s.mux }

// Serve serves the dashboard on l until Close (then it returns nil).
func (s *Server) Serve(l net.Listener) error {
	hs := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	s.srvMu.Lock()
	select {
	case <-s.stop:
		s.srvMu.Unlock()
		return errors.New("the dashboard is closed")
	default:
	}
	s.servers = append(s.servers, hs)
	s.srvMu.Unlock()
	if err := hs.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ListenAndServe listens on addr (see Listen) and serves the dashboard.
func (s *Server) ListenAndServe(addr string) error {
	l, err := s.Listen(addr)
	if err != nil {
		return err
	}
	return s.Serve(l)
}

// Close stops the sampler and every Serve.
func (s *Server) Close() error {
	s.srvMu.Lock()
	s.stopOnce.Do(func() { close(s.stop) })
	servers := s.servers
	s.servers = nil
	s.srvMu.Unlock()
	s.sampling.Wait()
	var err error
	for _, hs := range servers {
		err = errors.Join(err, hs.Close())
	}
	return err
}

// State builds the body of /api/v1/state now.
func (s *Server) State() State {
	live := s.src.Report()
	views := s.src.CPUs()
	info := s.src.Info()
	now := time.Now()
	s.mu.Lock()
	prev, cur, dt := s.prevRep, s.curRep, s.curAt.Sub(s.prevAt).Seconds()
	costs := s.attrib.costs()
	unS, unR := s.attrib.unattributedSender, s.attrib.unattributedReceiver
	s.mu.Unlock()
	if prev == nil {
		dt = 0
	}
	st := State{Time: now, IntervalS: dt, Info: info, Phases: s.src.Phases(), CPUs: make([]CPUState, len(live.CPUs)),
		ExitsPerIPI: withCaused(costs, live.Total), UnattributedSenderExits: unS, UnattributedReceiverExits: unR,
		Platform: Platform{PlatformReport: live.Platform, FaultByReason: nonNil(live.Platform.FaultByReason)},
		Sections: live.Sections, Latency: live.Latency, Devices: live.Devices}
	if st.Latency == nil {
		st.Latency = []accounting.LatencyReport{}
	}
	if st.Devices == nil {
		st.Devices = []accounting.DeviceReport{}
	}
	if !info.Started.IsZero() {
		st.UptimeS = now.Sub(info.Started).Seconds()
	}
	if st.Phases == nil {
		st.Phases = []linuxguest.PhaseRecord{}
	}
	if n := len(st.Phases); n > 0 {
		st.Phase = st.Phases[n-1].Name
	}
	if st.Sections == nil {
		st.Sections = []accounting.SectionReport{}
	}
	for i, c := range live.CPUs {
		var p, q *accounting.CPUReport
		if prev != nil && i < len(prev.CPUs) && i < len(cur.CPUs) {
			p, q = &prev.CPUs[i], &cur.CPUs[i]
		}
		st.CPUs[i] = CPUState{CPU: c.CPU, Counters: counters(c, p, q, dt), State: "unknown"}
		if i < len(views) {
			st.CPUs[i].State = views[i].State
			st.CPUs[i].APIC = apicState(views[i].APIC)
		} else {
			st.CPUs[i].APIC = apicState(vlapic.State{})
		}
	}
	var p, q *accounting.CPUReport
	if prev != nil {
		p, q = &prev.Total, &cur.Total
	}
	st.Total = counters(live.Total, p, q, dt)
	return st
}

func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, s.State())
}

// History is the body of /api/v1/history: one entry per sampling
// interval, oldest first, each the rates over the interval ending at Time.
type History struct {
	IntervalS float64         `json:"interval_s"`
	Classes   []string        `json:"classes"`
	Samples   []HistorySample `json:"samples"`
}

// HistorySample is the rates over one interval.
type HistorySample struct {
	Time                time.Time          `json:"time"`
	ExitsPerSec         float64            `json:"exits_per_sec"`
	ByClassPerSec       map[string]float64 `json:"by_class_per_sec"`
	IPIsSentPerSec      float64            `json:"ipis_sent_per_sec"`
	IPIsDeliveredPerSec float64            `json:"ipis_delivered_per_sec"`
	InjectedPerSec      float64            `json:"injected_per_sec"`
}

// History lists the rates of the samples kept.
func (s *Server) History() History {
	s.mu.Lock()
	samples := s.ring.list()
	s.mu.Unlock()
	h := History{IntervalS: s.opts.Interval.Seconds(), Classes: classNames[:], Samples: []HistorySample{}}
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		dt := b.at.Sub(a.at).Seconds()
		if dt <= 0 || len(a.exits) != len(b.exits) {
			continue
		}
		rate := func(x, y uint64) float64 { return float64(delta(x, y)) / dt }
		hs := HistorySample{Time: b.at, ExitsPerSec: rate(b.totalExits(), a.totalExits()),
			ByClassPerSec: make(map[string]float64, numClasses)}
		ca, cb := a.totalClasses(), b.totalClasses()
		for c := range numClasses {
			hs.ByClassPerSec[class(c).String()] = rate(cb[c], ca[c])
		}
		hs.IPIsSentPerSec = rate(sumKinds(b.totalKinds(b.sent)), sumKinds(a.totalKinds(a.sent)))
		hs.IPIsDeliveredPerSec = rate(sumKinds(b.totalKinds(b.delivered)), sumKinds(a.totalKinds(a.delivered)))
		var ia, ib uint64
		for j := range a.injected {
			ia, ib = ia+a.injected[j], ib+b.injected[j]
		}
		hs.InjectedPerSec = rate(ib, ia)
		h.Samples = append(h.Samples, hs)
	}
	return h
}

func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, s.History())
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	// The page polls every second: a cached answer would freeze it.
	w.Header().Set("Cache-Control", "no-store")
	e := json.NewEncoder(w)
	e.SetIndent("", " ")
	e.Encode(v)
}
