package benchreport

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot sizes. vgsvg measures in points; a browser shows 8in as 768 px.
const (
	chartWidth  = 8 * vg.Inch // WriteSVG
	chartHeight = 5 * vg.Inch
	panelWidth  = 5 * vg.Inch // one panel of WriteDistributionSVG
	panelHeight = 4 * vg.Inch

	barWidth = 24 // points; also the width of a box in a box plot
)

// palette is matplotlib's "tab10": ten colors distinct enough to tell
// apart all of 'govmm bench's eight modes (plotutil's palette has seven).
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

// modeColor is the color of the i-th mode or group.
func modeColor(i int) color.Color { return palette[i%len(palette)] }

// WriteSVG plots metric (e.g. Row.Total) for one section, one line per
// mode against the vCPU count. A run with a single vCPU count has no line
// to draw, so it gets one bar per mode instead.
func (rep *Report) WriteSVG(w io.Writer, section int, title, yLabel string, metric func(Row) float64) error {
	var modes []string
	byMode := map[string]plotter.XYs{}
	cpus := map[int]bool{}
	for _, r := range rep.sorted() {
		if r.Section != section {
			continue
		}
		if _, ok := byMode[r.Mode]; !ok {
			modes = append(modes, r.Mode)
		}
		byMode[r.Mode] = append(byMode[r.Mode], plotter.XY{X: float64(r.CPUs), Y: metric(r)})
		cpus[r.CPUs] = true
	}
	if len(modes) == 0 {
		return fmt.Errorf("benchreport: no rows for section %d", section)
	}

	canvas := vgsvg.New(chartWidth, chartHeight)
	dc := draw.New(canvas)
	p := newPlot(title, yLabel)
	if cpuMarks := cpuTicks(cpus); len(cpuMarks) == 1 {
		p.X.Label.Text = "mode (" + cpuMarks[0].Label + " vCPUs)"
		for i, m := range modes {
			bar, err := plotter.NewBarChart(plotter.Values{byMode[m][0].Y}, barWidth)
			if err != nil {
				return fmt.Errorf("benchreport: section %d, mode %s: %w", section, m, err)
			}
			bar.XMin = float64(i)
			bar.Color = modeColor(i)
			p.Add(bar)
		}
		// The bars are labelled with their modes; a legend would repeat them.
		nominalX(p, modes, chartWidth)
		p.Draw(dc)
	} else {
		p.X.Label.Text = "vCPUs"
		p.X.Tick.Marker = cpuMarks
		legend := plot.NewLegend()
		for i, m := range modes {
			line, points, err := plotter.NewLinePoints(byMode[m])
			if err != nil {
				return fmt.Errorf("benchreport: section %d, mode %s: %w", section, m, err)
			}
			line.Color = modeColor(i)
			line.Width = vg.Points(2)
			points.Color = modeColor(i)
			// Shapes tell the lines apart where colors do not (print, color blindness).
			points.Shape = plotutil.Shape(i)
			p.Add(line, points)
			legend.Add(m, line, points)
		}
		// Measure from zero so that the lines' heights compare as ratios.
		p.Y.Min = math.Min(p.Y.Min, 0)
		drawBesideLegend(dc, p, legend)
	}
	_, err := canvas.WriteTo(w)
	return err
}

// cpuTicks marks the measured vCPU counts, not round numbers between them.
func cpuTicks(cpus map[int]bool) plot.ConstantTicks {
	var ticks plot.ConstantTicks
	for n := range cpus {
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: strconv.Itoa(n)})
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Value < ticks[j].Value })
	return ticks
}

// drawBesideLegend draws p with legend to its right, outside the data
// area, where it cannot hide a line however many modes there are.
func drawBesideLegend(c draw.Canvas, p *plot.Plot, legend plot.Legend) {
	const gap = vg.Length(10)
	legend.Top, legend.Left = true, true
	legend.Padding = vg.Points(3)
	strip := legend.Rectangle(c).Size().X + 2*gap
	area := draw.Crop(c, 0, -strip, 0, 0)
	p.Draw(area)
	data := p.DataCanvas(area)
	legend.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: c.Max.X - strip + gap, Y: data.Min.Y},
		Max: vg.Point{X: c.Max.X - gap, Y: data.Max.Y},
	}})
}

// Samples is one group's (one mode's) samples of one measure.
type Samples struct {
	Name   string
	Values []float64
}

// WriteDistributionSVG draws, side by side in one SVG, each group's samples
// as a box plot (left panel: title, yLabel) and a bar per group of a
// second, exact measure (right panel: exitsLabel, one value per group in
// exits, same order as groups; skipped when exits is nil).
//
// A group without samples is an error rather than a gap: it means that
// group's runs failed, which a plot would hide.
func WriteDistributionSVG(w io.Writer, title, yLabel string, groups []Samples, exitsLabel string, exits []float64) error {
	if len(groups) == 0 {
		return errors.New("benchreport: no groups to plot")
	}
	if exits != nil && len(exits) != len(groups) {
		return fmt.Errorf("benchreport: %d exit values for %d groups", len(exits), len(groups))
	}
	names := make([]string, len(groups))
	boxes := newPlot(title, yLabel)
	for i, g := range groups {
		if len(g.Values) == 0 {
			return fmt.Errorf("benchreport: group %q has no samples", g.Name)
		}
		box, err := plotter.NewBoxPlot(barWidth, float64(i), plotter.Values(g.Values))
		if err != nil {
			return fmt.Errorf("benchreport: group %q: %w", g.Name, err)
		}
		box.FillColor = modeColor(i)
		boxes.Add(box)
		names[i] = g.Name
	}
	nominalX(boxes, names, panelWidth)
	panels := []*plot.Plot{boxes}

	if exits != nil {
		bars := newPlot(exitsLabel, "")
		for i, v := range exits {
			bar, err := plotter.NewBarChart(plotter.Values{v}, barWidth)
			if err != nil {
				return fmt.Errorf("benchreport: %s of group %q: %w", exitsLabel, names[i], err)
			}
			bar.XMin = float64(i)
			bar.Color = modeColor(i)
			bars.Add(bar)
		}
		nominalX(bars, names, panelWidth)
		panels = append(panels, bars)
	}

	canvas := vgsvg.New(vg.Length(len(panels))*panelWidth, panelHeight)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Points(20),
		PadTop: vg.Points(5), PadBottom: vg.Points(5), PadLeft: vg.Points(5), PadRight: vg.Points(5)}
	// Align gives both panels data areas of one height, so the panels'
	// baselines line up whatever their tick labels' widths.
	areas := plot.Align([][]*plot.Plot{panels}, tiles, draw.New(canvas))
	for i, p := range panels {
		p.Draw(areas[0][i])
	}
	_, err := canvas.WriteTo(w)
	return err
}

// newPlot is a plot with the title, a y-axis label and readable y ticks.
func newPlot(title, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(8)
	p.Y.Label.Text = yLabel
	p.Y.Tick.Marker = readableTicks{}
	return p
}

// nominalX names the x positions 0, 1, ... and slants the names when
// upright they would run into each other in a plot width wide.
func nominalX(p *plot.Plot, names []string, width vg.Length) {
	p.NominalX(names...)
	var total vg.Length
	for _, n := range names {
		total += p.X.Tick.Label.Width(n + "  ")
	}
	if total > width*3/4 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
}

// readableTicks places ticks like plot.DefaultTicks but labels them with
// tickLabel: DefaultTicks switches to exponent notation above a million
// (1.5e+08), unreadable for cycle counts.
type readableTicks struct{}

func (readableTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	var labelled []int
	for i, t := range ticks {
		if !t.IsMinor() {
			labelled = append(labelled, i)
		}
	}
	// DefaultTicks often labels just two ticks (0 and 250,000,000), too
	// few to read a value off; then label its few minor ticks as well.
	if len(labelled) < 3 && len(ticks) <= 11 {
		labelled = labelled[:0]
		for i := range ticks {
			labelled = append(labelled, i)
		}
	}
	if !relabel(ticks, labelled, tickLabel) {
		// The ticks are closer than tickLabel's precision (DefaultTicks'
		// own labels can then repeat too): add decimals until they differ.
		for decimals := 1; decimals <= 15; decimals++ {
			if relabel(ticks, labelled, func(v float64) string { return groupThousands(v, decimals) }) {
				break
			}
		}
	}
	return ticks
}

// relabel labels the ticks at the indices labelled with format and
// reports whether the labels are all different.
func relabel(ticks []plot.Tick, labelled []int, format func(float64) string) bool {
	seen := map[string]bool{}
	for _, i := range labelled {
		ticks[i].Label = format(ticks[i].Value)
		if seen[ticks[i].Label] {
			return false
		}
		seen[ticks[i].Label] = true
	}
	return true
}

// tickLabel prints v as a whole number with thousands separators from
// 1000 on (155,567,602), below that like the tables' ratios: up to two
// decimals (2.02, 0.5, 3).
func tickLabel(v float64) string {
	if math.Abs(math.Round(v)) < 1000 {
		return num(v)
	}
	return groupThousands(v, 0)
}

// groupThousands prints v with the given decimals and a comma between
// each three digits of its whole part.
func groupThousands(v float64, decimals int) string {
	s := strconv.FormatFloat(math.Abs(v), 'f', decimals, 64)
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if v < 0 && strings.Trim(s, "0.") != "" {
		b.WriteByte('-')
	}
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}
