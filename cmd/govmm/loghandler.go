package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// lineHandler is govmm's slog handler: what the library packages report
// (vmm's Config.Log, slog's default) as the command's own one-line
// messages, "govmm: MESSAGE key=value ...", with a multi-line value (a
// vCPU's state, the goroutines) printed after its line as a block.
type lineHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	attrs []slog.Attr
}

func newLineHandler(w io.Writer) *lineHandler { return &lineHandler{mu: &sync.Mutex{}, w: w} }

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var line, blocks strings.Builder
	line.WriteString("govmm: " + r.Message)
	add := func(a slog.Attr) bool {
		v := a.Value.Resolve().String()
		if strings.Contains(v, "\n") {
			fmt.Fprintf(&blocks, "%s:\n%s\n", a.Key, strings.TrimRight(v, "\n"))
		} else {
			fmt.Fprintf(&line, " %s=%s", a.Key, v)
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, line.String()+"\n"+blocks.String())
	return err
}

func (h *lineHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &lineHandler{mu: h.mu, w: h.w, attrs: append(append([]slog.Attr{}, h.attrs...), attrs...)}
}

// WithGroup is not used by govmm's packages: groups are flattened.
func (h *lineHandler) WithGroup(string) slog.Handler { return h }
