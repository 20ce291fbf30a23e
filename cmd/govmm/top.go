package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/govmm/govmm/dashboard"
)

// cmdTop is 'govmm top': in the spirit of kvm_stat, a refreshing terminal
// table of a running VM's exits, read from its dashboard's /api/v1/state
// (govmm run --dashboard ADDR). --once prints one frame and exits.
func cmdTop(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("top", "usage: govmm top [--url http://127.0.0.1:PORT] [--interval 1s] [--once]", "", stderr)
	url := fs.String("url", "http://"+dashboard.DefaultAddr, "the dashboard of the running VM")
	interval := fs.Duration("interval", time.Second, "time between frames")
	once := fs.Bool("once", false, "print one frame and exit")
	if err := parseNoArgs(fs, args); err != nil {
		return 0, err
	}
	if *interval <= 0 {
		return 0, fmt.Errorf("--interval must be positive, got %v", *interval)
	}
	base := strings.TrimRight(*url, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		base = "http://" + base
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		st, err := fetchState(ctx, client, base)
		if ctx.Err() != nil {
			return 0, nil // Ctrl-C: a normal way to leave
		}
		if err != nil {
			return 0, err
		}
		if !*once {
			fmt.Fprint(stdout, "\x1b[H\x1b[2J") // home, clear screen
		}
		writeTopFrame(stdout, base, st)
		if *once {
			return 0, nil
		}
		select {
		case <-ctx.Done():
			return 0, nil
		case <-time.After(*interval):
		}
	}
}

func fetchState(ctx context.Context, c *http.Client, base string) (*dashboard.State, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/state", nil)
	if err != nil {
		return nil, fmt.Errorf("bad dashboard URL %q: %v", base, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap() // drop Go's "Get <url>:" prefix; we name the URL ourselves
		}
		return nil, fmt.Errorf("cannot reach the dashboard at %s (is a VM running with --dashboard?): %v", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the dashboard at %s answered %s", base, resp.Status)
	}
	var st dashboard.State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("the dashboard at %s sent an unreadable state: %v", base, err)
	}
	return &st, nil
}

// writeTopFrame prints one screen: the VM, the totals, one row per vCPU
// with its rate and top causes, the IPIs by kind with their cost in exits.
func writeTopFrame(w io.Writer, base string, st *dashboard.State) {
	phase := st.Phase
	if phase == "" {
		phase = "-"
	}
	mode := st.Info.Mode
	if mode == "" {
		mode = "-"
	}
	fmt.Fprintf(w, "govmm top  %s  mode %s  %d vCPUs  up %s  phase %s  %s\n", base, mode, st.Info.CPUs,
		time.Duration(st.UptimeS*float64(time.Second)).Round(time.Second), phase, st.Time.Format("15:04:05"))
	t := st.Total
	fmt.Fprintf(w, "exits %d (%s/s)  IPIs sent %s/s  received %s/s  injected %s/s  kicks %d  wakeups %d  remap faults %d\n\n",
		t.Exits, rate(t.ExitsPerSec), rate(t.IPIsSentPerSec), rate(t.IPIsDeliveredPerSec), rate(t.InjectedPerSec),
		t.KicksSent, t.Wakeups, st.Platform.RemapFaults)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "vCPU\tstate\texits/s\texits\tIPIs sent\tinjected\tTPR\tIRR\ttop causes (per s)")
	for _, c := range st.CPUs {
		var sent uint64
		for _, n := range c.IPISent {
			sent += n
		}
		irr := "-"
		if len(c.APIC.IRR) > 0 {
			irr = fmt.Sprintf("%d vec", len(c.APIC.IRR))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%#x\t%s\t%s\n", c.CPU, c.State, rate(c.ExitsPerSec), c.Exits, sent,
			c.Injected, c.APIC.TPR, irr, topCauses(c.TopCauses, 3))
	}
	fmt.Fprintf(tw, "all\t\t%s\t%d\t\t%d\t\t\t%s\n", rate(t.ExitsPerSec), t.Exits, t.Injected, topCauses(t.TopCauses, 4))
	tw.Flush()

	if len(st.ExitsPerIPI) > 0 {
		fmt.Fprintln(w, "\nIPIs by destination kind")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "kind\tsent\treceived\tsender exits/IPI\treceiver exits/recv\texits/IPI")
		for _, k := range st.ExitsPerIPI {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.2f\t%.2f\n", k.Kind, k.Sent, k.Delivered, k.SenderExitsPerIPI,
				k.ReceiverExitsPerDelivery, k.ExitsPerIPI)
		}
		tw.Flush()
	}
	if len(st.Platform.FaultByReason) > 0 {
		reasons := make([]string, 0, len(st.Platform.FaultByReason))
		for r, n := range st.Platform.FaultByReason {
			reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
		}
		sort.Strings(reasons)
		fmt.Fprintf(w, "\nremapping faults: %s\n", strings.Join(reasons, ", "))
	}
}

func topCauses(tc []dashboard.CauseCount, n int) string {
	var parts []string
	for i, c := range tc {
		if i == n {
			break
		}
		if c.PerSec > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", c.Cause, rate(c.PerSec)))
		} else {
			parts = append(parts, fmt.Sprintf("%s (%d)", c.Cause, c.Exits))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// rate prints a per-second figure to a useful precision.
func rate(r float64) string {
	switch {
	case r == 0:
		return "0"
	case r < 10:
		return fmt.Sprintf("%.2f", r)
	case r < 100:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.0f", r)
}
